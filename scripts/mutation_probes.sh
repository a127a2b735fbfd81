#!/bin/bash
# Mutation probes (issue #29): each applies one mutation to a throwaway worktree of HEAD, runs the
# tests that must kill it, and reverts. Every line must say rc=1. Needs make services-up.
repo=$(git rev-parse --show-toplevel)
work=$(mktemp -d)
git -C "$repo" worktree add -q --detach "$work" HEAD
trap 'git -C "$repo" worktree remove --force "$work"' EXIT
ln -s "$repo/.venv" "$work/.venv"
cd "$work"
eval "$(scripts/services/env.sh)"
probe() {
  local name="$1" file="$2" old="$3" new="$4" tests="$5"
  cp "$file" "$work/.probe.bak"
  python3 - "$file" "$old" "$new" <<'PY'
import sys
p, old, new = sys.argv[1:]
s = open(p).read()
assert s.count(old) == 1, (p, old, s.count(old))
open(p, "w").write(s.replace(old, new))
PY
  timeout 900 .venv/bin/pytest -q -p no:cacheprovider $tests > "$work/probe-$name.log" 2>&1
  local rc=$?
  cp "$work/.probe.bak" "$file"
  echo "$name: pytest rc=$rc ($(grep -E '[0-9]+ (passed|failed)' "$work/probe-$name.log" | tail -1))"
}
probe charoffset ud_assets/decoding/decoder.py "            char_offset=section.char_offset,
            char_length=section.char_length,
            mime_type=info.mime_type," "            char_offset=section.char_offset + 1,
            char_length=section.char_length,
            mime_type=info.mime_type," "tests/defs/test_checks.py -k all_checks_pass"
probe chunkrow ud_assets/processing/chunks.py "pool.submit(lib.put_children, new_chunks, [s.id for s in sections])" "pool.submit(lib.put_children, new_chunks[1:], [s.id for s in sections])" "tests/defs/test_checks.py -k all_checks_pass"
probe imageobject resources/librarian.py "                    lambda pair: self.objects.put(pair[0].object_id, pair[1].content, pair[0].kind)," "                    lambda pair: None if pair[1].document_type == 'image' else self.objects.put(pair[0].object_id, pair[1].content, pair[0].kind)," "tests/defs/test_checks.py -k all_checks_pass"
probe uploadlog resources/embedded.py "            if event:
                c.execute(" "            if event and not meta.id.endswith('3'):
                c.execute(" "tests/resources/test_librarian.py -k uploads_since_cursor"
probe uploadlog_cassandra resources/cassandra/documents.py "        if event:" "        if event and not meta.id.endswith('3'):" "tests/resources/test_librarian.py -k uploads_since_cursor"
probe elementloop ud_assets/processing/sections.py "        for element in section.elements:
            if stored[element.offset : element.offset + element.length] != element.text:
                problems.append(f\"element {element.element_id} is not at offset {element.offset} of {section.id}\")
" "" "tests/defs/test_checks.py -k letter"
