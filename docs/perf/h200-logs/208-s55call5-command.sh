S=$SECONDS
nvidia-smi --query-gpu=name,uuid --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
[ -d /tmp/gh-u ] || bash scripts/carry_repo.sh unpack /tmp/gh-u >/dev/null
rm -rf /tmp/gh-old; cp -r /tmp/gh-u /tmp/gh-old; cp .carry/conv_old.py /tmp/gh-old/greyhound/ops/causal_conv1d.py
(cd /tmp/gh-u && git log --oneline -1)
for r in 1 2 3; do
  for t in new old; do [[ $r == 2 ]] && t=$([[ $t == new ]] && echo old || echo new)
    d=/tmp/gh-u; [[ $t == old ]] && d=/tmp/gh-old
    (cd $d && PYTHONPATH=/tmp/site:$d timeout 120 python3 -m benchmarks causal_conv1d --mode backward,full --providers greyhound \
      --batch-size 8 --dim 4096 --seq-len 2048 --width 4 --layout channel_last,contiguous --dtype bfloat16 --no-csv 2>&1 \
      | grep -E "^  greyhound|rror" | sed -E 's/  +/ /g' | cut -c1-200 | sed "s/^/r$r $t /")
  done
done
echo t=$((SECONDS-S))
