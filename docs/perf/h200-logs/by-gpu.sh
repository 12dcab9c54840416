#!/bin/bash
# Runs .carry/cmd.sh with PART=all on an H200 (LIMIT default 575) and with PART=ab on any other GPU (H100_LIMIT,
# default 330): a start that lends an H100 when an H200 was asked for still times the session's A/B.
name=$(nvidia-smi --query-gpu=name,uuid --format=csv,noheader)
echo "$name"
case $name in
  *H200*) PART=${PART:-all} LIMIT=${LIMIT:-575} bash .carry/cmd.sh ;;
  *) echo "not an H200: PART=ab"; PART=ab LIMIT=${H100_LIMIT:-330} bash .carry/cmd.sh ;;
esac
