PART=3 LIMIT=400 bash .carry/cmd.sh   # .carry/cmd.sh = 196-s51call1-command.sh
