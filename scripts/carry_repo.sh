#!/bin/bash
# The repository the offline device gets, in .carry/ (carry: [".whl", ".carry"]): a bundle of main's last DEPTH commits
# (default 16) and .carry/shallow, the commits where that history is cut. The hashes are the real ones, so asv's result
# files and gpus.csv name the commits as they are here. The whole history's bundle had grown to 46.7 MB by session 48,
# the last 16 commits' is about 15 MB, and the working tree that travels, the wheels in it, is limited to 64 MiB.
#   here:   bash scripts/carry_repo.sh pack [DEPTH]      (main as committed: what is not committed does not travel)
#   device: bash scripts/carry_repo.sh unpack DIR        (DIR: a repository, main checked out, origin/main beside it;
#           DIR must not exist, be empty, or be an earlier unpack's repository (a git repository's top): it is replaced)
# asv runs only the commits inside that history: `HEAD~4..HEAD` needs DEPTH >= 5. Without .carry/shallow (a bundle made
# with `git bundle create .carry/repo.bundle --all`, or DEPTH past the first commit) unpack clones the bundle whole.
set -euo pipefail
case ${1:-} in
pack)
  depth=${2:-16}
  if ! [[ $depth =~ ^[1-9][0-9]*$ ]]; then
    echo "carry_repo.sh pack: DEPTH must be a positive integer (commits of main to carry), got '$depth'" >&2
    exit 2
  fi
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  git clone -q --depth "$depth" --branch main "file://$(git rev-parse --show-toplevel)" "$tmp/repo"
  mkdir -p .carry
  rm -f .carry/repo.bundle .carry/shallow
  git -C "$tmp/repo" bundle create "$PWD/.carry/repo.bundle" main 2> /dev/null
  if [[ -f $tmp/repo/.git/shallow ]]; then cp "$tmp/repo/.git/shallow" .carry/shallow; fi
  echo "carry_repo.sh: .carry/repo.bundle: main at $(git -C "$tmp/repo" rev-parse --short main), \
$(git -C "$tmp/repo" rev-list --count main) commits, $(du -h .carry/repo.bundle | cut -f1)"
  ;;
unpack)
  dir=${2:-}
  [[ -n $dir ]] || { echo "carry_repo.sh unpack: DIR (where to put the repository) is missing or empty" >&2; exit 2; }
  bundle=$PWD/.carry/repo.bundle
  [[ -f $bundle ]] || { echo "carry_repo.sh unpack: no $bundle (carry .carry)" >&2; exit 2; }
  # DIR is deleted and made again: refuse any DIR whose deletion loses more than an earlier unpack's repository
  refuse() {
    echo "carry_repo.sh unpack: DIR must be a new folder or an earlier unpack's repository, got '$dir' ($1)" >&2
    exit 2
  }
  under() { [[ $1 == "$2" || $2 == / || $1 == "$2"/* ]]; }  # path $1 is $2 or inside it
  real=$(realpath -m -- "$dir")
  if under "$(realpath -m -- "$PWD")" "$real"; then refuse "it is the current directory or holds it"; fi
  for carried in "$bundle" "$PWD/.carry/shallow"; do
    if under "$(realpath -m -- "$carried")" "$real"; then refuse "it holds $carried, which unpack reads"; fi
  done
  if [[ -e $dir || -L $dir ]]; then
    if [[ -L $dir || ! -d $dir ]]; then
      refuse "it exists and is not a folder"
    elif [[ -n $(ls -A -- "$dir") && $(git -C "$dir" rev-parse --show-toplevel 2> /dev/null) != "$real" ]]; then
      refuse "it is a non-empty folder that is not a git repository"
    fi
  fi
  rm -rf -- "$dir"
  if [[ -f .carry/shallow ]]; then  # git clone refuses a bundle whose history is cut: unbundle into a shallow repository
    git init -q -- "$dir"
    cp -- .carry/shallow "$dir/.git/shallow"
    git -C "$dir" bundle unbundle "$bundle" | while read -r hash ref; do
      git -C "$dir" update-ref "refs/remotes/origin/${ref#refs/heads/}" "$hash"
    done
  else
    git clone -q -- "$bundle" "$dir"
  fi
  git -C "$dir" checkout -q -B main origin/main
  ;;
*)
  echo "usage: bash scripts/carry_repo.sh pack [DEPTH] | unpack DIR" >&2
  exit 2
  ;;
esac
