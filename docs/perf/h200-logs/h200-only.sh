#!/bin/bash
# Runs .carry/cmd.sh (PART=${PART:-all}) only on an H200; on any other GPU it prints the GPU and stops at once.
name=$(nvidia-smi --query-gpu=name,uuid --format=csv,noheader)
echo "$name"
case $name in *H200*) PART=${PART:-all} LIMIT=${LIMIT:-575} bash .carry/cmd.sh ;; *) echo "not an H200: stopped"; exit 3 ;; esac
