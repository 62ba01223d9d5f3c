# One image for web, workers and beat. On PyPI, torch==2.13.0 for Linux x86_64 is the CUDA
# build, so the same image runs the GPU worker on a machine with the NVIDIA container runtime.
FROM python:3.11-slim

# MODELS_DIR is the mount path of the compose `models` volume (docker-compose.yml): the setting
# and the mount name the same folder, so what training saves is what every worker loads.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    CLAIMWATCH_VAR_DIR=/app/var \
    MODELS_DIR=/app/var/models

RUN apt-get update \
    && apt-get install -y --no-install-recommends libpq5 \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY requirements.txt ./
RUN pip install --no-cache-dir -r requirements.txt

COPY . .
# Every folder the app writes to under var/ (.dockerignore keeps the host's out) exists in the
# image, owned by the app user. A named volume mounted on a folder the image has starts with that
# folder's owner; one mounted on a path the image lacks is created root-owned, and training then
# dies with PermissionError when it stages the artifact.
RUN useradd --create-home --uid 1000 --user-group claimwatch \
    && mkdir -p /app/var/models /app/var/staticfiles /app/var/broker /app/var/logs /app/var/audit-checkpoints \
    && chown -R claimwatch:claimwatch /app/var
USER claimwatch

# collectstatic needs the secrets to import settings; these throwaway ones never serve a request.
RUN DEBUG=0 SECRET_KEY=collectstatic-only QA_SAMPLE_SALT=collectstatic-only-salt \
    AUDIT_CHECKPOINT_KEY=collectstatic-only-never-signs-a-checkpoint \
    python manage.py collectstatic --noinput --verbosity 0

EXPOSE 8000
CMD ["gunicorn", "compliance_site.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3"]
