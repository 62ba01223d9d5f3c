#!/bin/bash
# Device run: unpack the carried packages and encoder, then the prepared device check.
set -u
T=${DEV_TMP:-/tmp/d}; mkdir -p $T
tar -xJf .dev/site312.tar.xz -C $T && tar -xJf .dev/enc16.tar.xz -C $T || exit 3
python3 .dev/enc32.py $T/enc16 || exit 4
export PYTHONPATH=$T/site312${EXTRA_PYTHONPATH:+:$EXTRA_PYTHONPATH} BASE_MODEL_PATH=$T/enc16 HF_HUB_OFFLINE=1 DEBUG=1 \
  CLAIMWATCH_VAR_DIR=$T/var PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
OUT=${OUT:-$T/out}; mkdir -p $OUT
(nvidia-smi; python3 -c "import torch, transformers, sys; print(sys.version, torch.__version__, torch.version.cuda, transformers.__version__)") > $OUT/env.txt 2>&1
tail -1 $OUT/env.txt
timeout ${CHECK_TIMEOUT:-480} python3 manage.py gpu_check --json "$@" > $OUT/gpu_check.json 2> $OUT/gpu_check.log
echo "gpu_check exit $?"
grep "^{" $OUT/gpu_check.log | cut -c1-600
head -c 300 $OUT/gpu_check.json; echo
if [ -n "${PROFILE:-}" ]; then
  timeout ${PROFILE_TIMEOUT:-130} python3 .dev/profile_gpu.py > $OUT/profile.txt 2>&1
  echo "profile exit $?"
  grep -v "Token indices" $OUT/profile.txt | tail -c 7000
fi
