PART=2 LIMIT=585 bash .carry/cmd.sh   # .carry/cmd.sh = planned-next-call.sh at c4354ad (as 196-s51call1-command.sh, with PART=2)
