#!/bin/bash
# session 31 call 7: the asv CheriBlockSweep (the published table's cells: N 16/64/512 x fp32/bf16/fp16 x training
# forward / megakernel + eval / megakernel without eval) of the tip, gluon_wsz the bf16/fp16 inference default
TAG=s31c7 DEADLINE=300 bash scripts/h200_asv.sh "HEAD^! CheriBlockSweep" 2>&1 | grep -v "^WARNING: Target" | tail -5
