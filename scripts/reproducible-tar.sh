# Sourced by the bundle scripts: one way to write a reproducible tar and to replace an archive
# only when its bytes changed (so Ansible's copy to a target is skipped for an unchanged tree).

# repro_tar DIR MEMBER...: a tar of DIR's MEMBERs on stdout with fixed order, owner, mode and
# times (an unchanged tree gives the same bytes)
repro_tar() {
  local dir=$1; shift
  tar -C "$dir" --sort=name --owner=0 --group=0 --numeric-owner --mtime='2000-01-01' \
      --mode='u+rwX,go+rX,go-w' -cf - "$@"
}

# replace_if_changed NEW FINAL: move NEW to FINAL unless FINAL has the same bytes; prints
# "built" or "unchanged"
replace_if_changed() {
  if [ -f "$2" ] && cmp -s "$1" "$2"; then
    rm -f "$1"; echo "unchanged"
  else
    mv "$1" "$2"; echo "built"
  fi
}
