PART=3 LIMIT=190 bash .carry/cmd.sh   # .carry/cmd.sh = planned-next-call.sh at 1e0c606 (as 196-s51call1-command.sh)
