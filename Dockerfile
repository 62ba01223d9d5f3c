# One image for web, workers and beat. On PyPI, torch==2.13.0 for Linux x86_64 is the CUDA
# build, so the same image runs the GPU worker on a machine with the NVIDIA container runtime.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    CLAIMWATCH_VAR_DIR=/app/var

RUN apt-get update \
    && apt-get install -y --no-install-recommends libpq5 \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY requirements.txt ./
RUN pip install --no-cache-dir -r requirements.txt

COPY . .
RUN useradd --create-home --uid 1000 claimwatch \
    && mkdir -p /app/var \
    && chown -R claimwatch /app/var
USER claimwatch

# collectstatic needs a key to import settings; this throwaway one never serves a request.
RUN DEBUG=0 SECRET_KEY=collectstatic-only python manage.py collectstatic --noinput --verbosity 0

EXPOSE 8000
CMD ["gunicorn", "compliance_site.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3"]
