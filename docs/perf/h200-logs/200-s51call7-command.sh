nvidia-smi -L; TAG=s51x DEADLINE=250 bash scripts/h200_asv.sh "HEAD^! CheriBlockSweep" > /dev/null 2>&1; echo rc=$?; grep -E "^===" $OUT/asv-s51x.log | head -4
