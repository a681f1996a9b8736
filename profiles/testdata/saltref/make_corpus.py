#!/usr/bin/env python3
"""Writes the custom-state corpus under ../custom/{accept,reject}.

accept/<name>.yaml must compile; reject/<code>__<name>.yaml must be refused
with <code>. Expected positions live in ../custom/manifest.json (checked by
corpus_test.go). Run from this directory: python3 make_corpus.py
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ACC = os.path.join(HERE, "..", "custom", "accept")
REJ = os.path.join(HERE, "..", "custom", "reject")


def w(d, name, text):
    data = text.encode("utf-8") if isinstance(text, str) else text
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


A = lambda n, t: w(ACC, n + ".yaml", t)
R = lambda code, n, t: w(REJ, code + "__" + n + ".yaml", t)

# ---------------------------------------------------------------- accepted
A("basic_pkg", """nginx:
  pkg.installed:
    - name: nginx
""")
A("short_form", "just_nop: test.nop\n")
A("empty_args", "ok:\n  test.succeed_without_changes: []\n")
A("multi_ids", """first:
  test.succeed_without_changes:
    - name: one
second:
  test.succeed_with_changes:
    - name: two
third:
  test.nop: []
""")
A("two_modules_one_id", """nginx:
  pkg.installed: []
  service.running:
    - enable: true
    - require:
      - pkg: nginx
""")
A("requisites_require", """/etc/app.conf:
  file.managed:
    - contents: "x = 1"
    - require:
      - pkg: app
      - app_user
app:
  pkg.installed: []
app_user:
  user.present:
    - name: app
""")
A("requisites_all", """a:
  test.succeed_with_changes:
    - watch:
      - test: b
    - onchanges:
      - b
    - onfail_any:
      - test: c
    - require_any:
      - b
      - c
    - listen:
      - test: b
    - use:
      - test: b
b:
  test.succeed_with_changes:
    - require_in:
      - test: c
    - watch_in:
      - a
    - onchanges_in:
      - test: c
    - onfail_in:
      - c
    - prereq_in:
      - test: c
    - listen_in:
      - test: c
    - use_in:
      - test: c
c:
  test.succeed_without_changes:
    - onfail:
      - test: b
    - onfail_all:
      - b
    - prereq:
      - test: a
    - watch_any:
      - a
    - onchanges_any:
      - a
""")
A("names_strings", """tools:
  pkg.installed:
    - names:
      - git
      - curl
      - "vim"
""")
A("names_dicts", """dirs:
  file.directory:
    - names:
      - /srv/a:
        - mode: 750
        - user: root
      - /srv/b
    - makedirs: true
""")
A("explicit_order", """early:
  test.nop:
    - order: first
late:
  test.nop:
    - order: last
one:
  test.nop:
    - order: 1
neg:
  test.nop:
    - order: -1
auto:
  test.nop: []
""")
A("quoted_lookalikes", """quoted:
  test.nop:
    - a: "yes"
    - b: 'no'
    - c: "0644"
    - d: '1:30'
    - e: "1_000"
    - f: ".inf"
    - g: "~"
    - h: "true"
    - i: "1e3"
    - j: '='
    - k: "<<"
    - l: "0o644"
    - m: "y"
""")
A("timestamps_are_strings", """dates:
  test.nop:
    - day: 2001-12-14
    - when: 2001-12-14t21:59:43.10-05:00
    - spaced: 2001-12-14 21:59:43.10 -5
    - short: 2001-1-2
""")
A("block_literal", """script:
  cmd.run:
    - name: |
        set -e
        echo "hello"
        exit 0
    - shell: /bin/bash
""")
A("folded", """motd:
  file.managed:
    - name: /etc/motd
    - contents: >
        Welcome to this
        server.

        Be nice.
""")
A("flow_style", '{flowed: {test.succeed_without_changes: [{name: "flow"}, {require: [{test: other}]}]}, other: {test.nop: []}}\n')
A("nested_values", """/etc/app/config.json:
  file.serialize:
    - dataset:
        server:
          port: 8080
          hosts: [a, b, c]
          tls: {enabled: true, ciphers: null}
        weights: [0.5, 1.25, -3]
    - serializer: json
""")
A("numbers", """nums:
  test.nop:
    - zero: 0
    - neg_zero: -0
    - int: 42
    - neg: -17
    - big: 9007199254740992
    - small: -9007199254740992
    - frac: 1.5
    - negfrac: -0.25
    - tiny: 0.000001
    - pi: 3.14159265358979323846
""")
A("nulls", """nulls:
  test.nop:
    - tilde: ~
    - word: null
    - Word: Null
    - WORD: NULL
    - empty:
""")
A("bools", """bools:
  test.nop:
    - a: true
    - b: True
    - c: TRUE
    - d: false
    - e: False
    - f: FALSE
""")
A("unicode", """café ☕:
  test.succeed_without_changes:
    - name: "naïve — ünïcödé ✓"
    - emoji: 🚀
    - cjk: 漢字
""")
A("comments", """# leading comment
a:   # trailing comment on id
  # comment inside
  test.nop:
    - name: x  # after value
    # between args
    - other: z
# final comment
""")
w(ACC, "bom.yaml", b"\xef\xbb\xbfbom:\n  test.nop: []\n")
w(ACC, "crlf.yaml", b"crlf:\r\n  test.nop:\r\n    - name: x\r\n")
A("doc_markers", "---\nmarked:\n  test.nop: []\n...\n")
A("max_ids", "".join("id%03d: test.nop\n" % i for i in range(100)))
A("max_depth", "deep:\n  test.nop:\n    - v: " + "[" * 12 + "x" + "]" * 12 + "\n")
A("onlyif_unless", """guarded:
  cmd.run:
    - name: /usr/local/bin/setup
    - unless:
      - fun: file.file_exists
        path: /etc/setup.done
    - onlyif: test -d /opt
    - creates: /etc/setup.done
""")
A("file_mode_quoted", """/etc/secret.conf:
  file.managed:
    - mode: "0600"
    - user: root
    - group: root
    - replace: false
    - contents_newline: true
""")
A("string_lookalikes", """looks:
  test.nop:
    - range: 10:00-12:00
    - semver: 1.2.3
    - version: v1
    - ip: 10.0.0.1
    - exp_no_digits: 1e
    - plus: +x
    - dash: -foo
    - tilde: ~foo
    - nullable: nullable
    - yes_please: Yes_please
    - nope: nope
    - onward: onward
    - dots: ...x
    - path: /var/lib
    - colon: "a: b"
    - hash: a#b
""")
A("cmd_env", """envrun:
  cmd.run:
    - name: env
    - env:
      - LANG: C.UTF-8
      - PATH: /usr/bin
""")
A("requisite_glob", """watcher:
  cmd.wait:
    - name: systemctl reload app
    - watch:
      - file: /etc/app/*
""")
A("path_ids", """/etc/app/app.conf:
  file.managed:
    - contents: "a"
/usr/local/bin/tool:
  file.managed:
    - contents: "b"
    - mode: 755
""")
A("escapes", r'''esc:
  test.nop:
    - tab: "a\tb"
    - nl: "line1\nline2"
    - uni: "caf\u00e9"
    - hex: "\x41"
    - quote: "say \"hi\""
    - single: 'it''s'
    - backslash: "C:\\dir"
''')
A("sls_requisite", """later:
  test.nop:
    - require:
      - sls: oduflow.custom
""")
A("indentless_sequence", """indentless:
  test.nop:
  - name: x
  - require:
    - other
other:
  test.nop: []
""")
A("empty_strings", """empties:
  test.nop:
    - name: ""
    - other: ''
""")
A("dotted_id", """nginx.conf:
  file.managed:
    - name: /etc/nginx/nginx.conf
    - contents: ""
""")
A("underscore_module", """github.com:
  ssh_known_hosts.present:
    - user: root
    - enc: ssh-ed25519
""")
A("items_at_limit", "many:\n  test.nop:\n    - v: [" + ", ".join(str(i) for i in range(1000)) + "]\n")
A("scalar_at_limit", "long:\n  test.nop:\n    - v: \"" + "a" * (16 << 10) + "\"\n")
A("multiline_plain", """ml:
  test.nop:
    - v: this is a plain
        scalar over lines
""")
A("keys_quoted", """"quoted id":
  test.nop:
    - "name": x
    - 'other': z
""")
A("failing_state", """will_fail:
  test.fail_without_changes:
    - name: deliberate failure
after_fail:
  test.succeed_without_changes:
    - onfail:
      - test: will_fail
""")

A("requisite_in_strings", """svc:
  service.running:
    - name: svc
  pkg.installed:
    - name: svc-pkg
cfg:
  file.managed:
    - name: /etc/svc.conf
    - contents: "x"
    - require_in:
      - svc
    - watch_in:
      - svc-pkg
      - nothing-matches
    - onchanges_in:
      - test: tail
tail:
  test.nop: []
""")
A("use_by_id", """base_file:
  file.managed:
    - name: /etc/a
    - user: root
    - mode: 640
copy:
  file.managed:
    - name: /etc/b
    - use:
      - base_file
other:
  file.managed:
    - name: /etc/c
    - use:
      - file: base_file
""")
A("explicit_orders_distinct", """one:
  test.nop:
    - name: same
    - order: 5
two:
  test.nop:
    - name: other
    - order: 5
three:
  test.succeed_without_changes:
    - name: same
    - order: 5
""")

# ---------------------------------------------------------------- rejected
R("invalid_utf8", "latin1", b"id:\n  test.nop:\n    - name: caf\xe9\n")
R("invalid_utf8", "truncated", b"id:\n  test.nop:\n    - name: \xe2\x82\n")
R("invalid_character", "nul", b"id:\n  test.nop:\n    - name: a\x00b\n")
R("invalid_character", "nel", "id:\n  test.nop:\n    - name: 'a\u0085b'\n")
R("invalid_character", "line_separator", "id:\n  test.nop:\n    - name: a\u2028b\n")
R("invalid_character", "bom_inside", "id:\n  test.nop:\n    - name: a\ufeffb\n")
R("invalid_character", "c1_control", "id:\n  test.nop:\n    - name: a\u009bb\n")
R("invalid_character", "del", b"id:\n  test.nop:\n    - name: a\x7fb\n")
R("template_syntax", "jinja_expression", "id:\n  test.nop:\n    - name: {{ pillar['x'] }}\n")
R("template_syntax", "jinja_statement_in_comment", "# {% if x %}\nid:\n  test.nop: []\n")
R("template_syntax", "jinja_comment_in_quotes", "id:\n  test.nop:\n    - name: \"a{#b\"\n")
R("renderer_directive", "shebang", "#!jinja|yaml\nid:\n  test.nop: []\n")
R("renderer_directive", "indented_later", "id:\n  test.nop: []\n  #!py\n")
R("yaml_directive", "yaml_version", "%YAML 1.1\n---\nid:\n  test.nop: []\n")
R("yaml_directive", "tag_directive", "%TAG !e! tag:example.com,2000:\n---\nid:\n  test.nop: []\n")
R("yaml_syntax", "bad_indent", "id:\n  test.nop:\n    - name: x\n   - other: y\n")
R("yaml_syntax", "unclosed_quote", "id:\n  test.nop:\n    - name: \"abc\n")
R("yaml_syntax", "tab_indent", "id:\n\ttest.nop: []\n")
R("yaml_syntax", "slash_escape", "a:\n  test.nop:\n    - v: \"a\\/b\"\n")
R("yaml_syntax", "unclosed_flow", "{id: {test.nop: [}\n")
R("multiple_documents", "two_docs", "a:\n  test.nop: []\n---\nb:\n  test.nop: []\n")
R("multiple_documents", "trailing_empty_doc", "a:\n  test.nop: []\n---\n")
R("empty_document", "empty", "")
R("empty_document", "comments_only", "# nothing here\n\n# really\n")
R("empty_document", "marker_only", "---\n")
R("empty_document", "empty_mapping", "{}\n")
R("empty_document", "null", "~\n")
R("not_mapping", "list", "- test.nop\n- test.nop\n")
R("not_mapping", "scalar", "hello\n")
R("anchor", "anchored_value", "a:\n  test.nop:\n    - name: &n x\nb:\n  test.nop: []\n")
R("anchor", "anchor_then_alias", "a:\n  test.nop:\n    - name: &n x\n    - other: *n\n")
R("alias", "unknown_anchor", "a:\n  test.nop:\n    - name: *nowhere\n")
R("anchor", "billion_laughs", "lol1: &l1 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
  "lol2: &l2 [*l1, *l1, *l1, *l1, *l1, *l1, *l1, *l1, *l1]\n"
  "lol3: &l3 [*l2, *l2, *l2, *l2, *l2, *l2, *l2, *l2, *l2]\n"
  "lol4: [*l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3]\n")
R("explicit_tag", "str_tag", "a:\n  test.nop:\n    - name: !!str 5\n")
R("explicit_tag", "python_object", "a:\n  test.nop:\n    - name: !!python/object:os.system [id]\n")
R("explicit_tag", "local_tag", "a:\n  test.nop:\n    - name: !secret x\n")
R("explicit_tag", "non_specific", "a:\n  test.nop:\n    - name: ! 5\n")
R("explicit_tag", "tagged_mapping", "a: !!map\n  test.nop: []\n")
R("explicit_tag", "verbatim_tag", "a:\n  test.nop:\n    - v: !<tag:yaml.org,2002:int> 5\n")
R("merge_key", "merge_inline", "a:\n  test.nop:\n    - v:\n        <<: {x: 1}\n        y: 2\n")
R("duplicate_key", "duplicate_id", "a:\n  test.nop: []\nb:\n  test.nop: []\na:\n  test.nop: []\n")
R("duplicate_key", "nested_value", "a:\n  test.nop:\n    - v:\n        x: 1\n        z: 2\n        x: 3\n")
R("duplicate_key", "quoted_vs_plain", "a:\n  test.nop: []\n\"a\":\n  test.nop: []\n")
R("duplicate_key", "same_function_twice", "a:\n  test.nop: []\n  test.nop: []\n")
R("too_deep", "seventeen_levels", "deep:\n  test.nop:\n    - v: " + "[" * 13 + "x" + "]" * 13 + "\n")
R("too_deep", "flow_bomb", "a: " + "[" * 20000 + "\n")
R("too_many_ids", "hundred_and_one", "".join("id%03d: test.nop\n" % i for i in range(101)))
R("too_many_items", "long_list", "many:\n  test.nop:\n    - v: [" + ", ".join(str(i) for i in range(1001)) + "]\n")
R("scalar_too_long", "long_string", "long:\n  test.nop:\n    - v: \"" + "a" * ((16 << 10) + 1) + "\"\n")
R("non_string_key", "int_id", "123:\n  test.nop: []\n")
R("non_string_key", "null_id", "~:\n  test.nop: []\n")
R("non_string_key", "complex_key", "? [a, b]\n: test.nop\n")
R("non_string_key", "bool_argument", "a:\n  test.nop:\n    - true: x\n")
R("non_string_key", "nested_int_key", "a:\n  test.nop:\n    - v:\n        1: one\n")
R("ambiguous_scalar", "yes", "a:\n  test.nop:\n    - v: yes\n")
R("ambiguous_scalar", "on", "a:\n  service.running:\n    - enable: on\n")
R("ambiguous_scalar", "Off", "a:\n  test.nop:\n    - v: Off\n")
R("ambiguous_scalar", "NO", "a:\n  test.nop:\n    - v: NO\n")
R("ambiguous_scalar", "y", "a:\n  test.nop:\n    - v: y\n")
R("ambiguous_scalar", "octal_mode", "a:\n  file.managed:\n    - mode: 0644\n")
R("ambiguous_scalar", "octal_12", "a:\n  test.nop:\n    - v: 0o644\n")
R("ambiguous_scalar", "hex", "a:\n  test.nop:\n    - v: 0x1F\n")
R("ambiguous_scalar", "binary", "a:\n  test.nop:\n    - v: 0b101\n")
R("ambiguous_scalar", "underscore", "a:\n  test.nop:\n    - v: 1_000\n")
R("ambiguous_scalar", "sexagesimal", "a:\n  test.nop:\n    - v: 1:30\n")
R("ambiguous_scalar", "exponent", "a:\n  test.nop:\n    - v: 1e3\n")
R("ambiguous_scalar", "signed_exponent", "a:\n  test.nop:\n    - v: 1.5e+3\n")
R("ambiguous_scalar", "inf", "a:\n  test.nop:\n    - v: .inf\n")
R("ambiguous_scalar", "nan", "a:\n  test.nop:\n    - v: .NaN\n")
R("ambiguous_scalar", "leading_dot", "a:\n  test.nop:\n    - v: .5\n")
R("ambiguous_scalar", "trailing_dot", "a:\n  test.nop:\n    - v: 1.\n")
R("ambiguous_scalar", "integral_float", "a:\n  test.nop:\n    - v: 2.0\n")
R("ambiguous_scalar", "plus_sign", "a:\n  test.nop:\n    - v: +1\n")
R("ambiguous_scalar", "value_key", "a:\n  test.nop:\n    - v: =\n")
R("ambiguous_scalar", "yes_as_id", "yes:\n  test.nop: []\n")
R("ambiguous_scalar", "leading_zero_key", "a:\n  test.nop:\n    - v:\n        007: bond\n")
R("number_out_of_range", "above_2_53", "a:\n  test.nop:\n    - v: 9007199254740993\n")
R("number_out_of_range", "huge", "a:\n  test.nop:\n    - v: 123456789012345678901234567890\n")
R("forbidden_declaration", "include", "include:\n  - other\na:\n  test.nop: []\n")
R("forbidden_declaration", "extend", "extend:\n  a:\n    test.nop: []\n")
R("forbidden_declaration", "exclude", "exclude:\n  - id: a\na:\n  test.nop: []\n")
R("invalid_id", "reserved", "__extend__:\n  test.nop: []\n")
R("invalid_id", "empty", "\"\":\n  test.nop: []\n")
R("invalid_id", "separator", "\"a_|-b\":\n  test.nop: []\n")
R("invalid_id", "newline", "\"a\\nb\":\n  test.nop: []\n")
R("invalid_state", "plain_word", "a: hello\n")
R("invalid_state", "list", "a:\n  - test.nop\n")
R("invalid_state", "empty_mapping", "a: {}\n")
R("invalid_state", "null", "a:\n")
R("invalid_state", "number", "a: 5\n")
R("invalid_function", "module_only", "a:\n  pkg:\n    - installed\n    - name: x\n")
R("invalid_function", "three_parts", "a:\n  pkg.installed.extra: []\n")
R("invalid_function", "no_module", "a:\n  .installed: []\n")
R("invalid_function", "no_function", "a:\n  pkg.: []\n")
R("invalid_function", "requisite_at_id_level", "a:\n  test.nop: []\n  require:\n    - b\n")
R("invalid_function", "reserved_sls", "a:\n  test.nop: []\n  __sls__: other\n")
R("invalid_function", "short_three_parts", "a: pkg.installed.x\n")
R("invalid_function", "private_function", "a:\n  test._private: []\n")
R("duplicate_module", "pkg_twice", "a:\n  pkg.installed: []\n  pkg.latest: []\n")
R("arguments_not_list", "null_args", "a:\n  test.nop:\n")
R("arguments_not_list", "mapping_args", "a:\n  test.nop:\n    name: x\n")
R("arguments_not_list", "scalar_args", "a:\n  test.nop: x\n")
R("invalid_argument", "bare_string", "a:\n  pkg:\n    - installed\n".replace("pkg:", "pkg.installed:").replace("- installed", "- latest"))
R("invalid_argument", "two_keys", "a:\n  test.nop:\n    - name: x\n      other: y\n")
R("invalid_argument", "nested_list", "a:\n  test.nop:\n    - [x, y]\n")
R("invalid_argument", "empty_mapping", "a:\n  test.nop:\n    - {}\n")
R("invalid_argument", "dashed_name", "a:\n  test.nop:\n    - foo-bar: 1\n")
R("duplicate_argument", "name_twice", "a:\n  test.nop:\n    - name: x\n    - name: y\n")
R("reserved_argument", "fun", "a:\n  test.nop:\n    - fun: other\n")
R("reserved_argument", "state", "a:\n  test.nop:\n    - state: pkg\n")
R("reserved_argument", "dunder_env", "a:\n  test.nop:\n    - __env__: prod\n")
R("reserved_argument", "prerequired", "a:\n  test.nop:\n    - prerequired: true\n")
R("parallel_forbidden", "parallel_true", "a:\n  cmd.run:\n    - name: sleep 1\n    - parallel: true\n")
R("parallel_forbidden", "parallel_false", "a:\n  cmd.run:\n    - name: sleep 1\n    - parallel: false\n")
R("invalid_requisite", "not_list", "a:\n  test.nop:\n    - require: b\n")
R("invalid_requisite", "list_target", "a:\n  test.nop:\n    - require:\n      - pkg: [b, c]\n")
R("invalid_requisite", "dotted_type", "a:\n  test.nop:\n    - require:\n      - pkg.installed: b\n")
R("invalid_requisite", "number_item", "a:\n  test.nop:\n    - watch:\n      - 5\n")
R("invalid_requisite", "empty_target", "a:\n  test.nop:\n    - onchanges:\n      - test: \"\"\n")
R("invalid_requisite", "two_key_item", "a:\n  test.nop:\n    - require:\n      - test: b\n        pkg: c\n")
R("invalid_name", "number", "a:\n  test.nop:\n    - name: 5\n")
R("invalid_name", "list", "a:\n  test.nop:\n    - name: [x]\n")
R("invalid_name", "null", "a:\n  test.nop:\n    - name: ~\n")
R("invalid_names", "scalar", "a:\n  test.nop:\n    - names: x\n")
R("invalid_names", "number_item", "a:\n  test.nop:\n    - names:\n      - 5\n")
R("invalid_names", "entry_not_list", "a:\n  test.nop:\n    - names:\n      - x: {mode: 1}\n")
R("invalid_names", "nested_names", "a:\n  test.nop:\n    - names:\n      - x:\n        - names: [y]\n")
R("invalid_order", "word", "a:\n  test.nop:\n    - order: soon\n")
R("invalid_order", "float", "a:\n  test.nop:\n    - order: 1.5\n")
R("invalid_order", "too_large", "a:\n  test.nop:\n    - order: 100001\n")
R("ambiguous_order", "same_name_same_order", "a:\n  test.nop:\n    - name: x\n    - order: 5\nb:\n  test.nop:\n    - name: x\n    - order: 5\n")
R("ambiguous_order", "first_equals_zero", "p:\n  test.nop:\n    - order: first\nq:\n  test.nop:\n    - name: p\n    - order: 0\n")
R("ambiguous_order", "names_collide", "a:\n  pkg.installed:\n    - names: [p, q]\n    - order: 3\nb:\n  pkg.installed:\n    - names: [p]\n    - order: 3\n")
R("requisite_cycle", "require_each_other", "a:\n  test.nop:\n    - require:\n      - test: b\nb:\n  test.nop:\n    - watch:\n      - a\n")
R("requisite_cycle", "onchanges_prereq", "a:\n  test.nop:\n    - onchanges:\n      - b\n  cmd.run:\n    - name: x\nb:\n  test.nop:\n    - prereq:\n      - cmd: a\n")
R("invalid_requisite", "listen_in_string", "a:\n  test.nop:\n    - listen_in:\n      - b\nb:\n  test.nop: []\n")
R("invalid_requisite", "use_unknown", "a:\n  test.nop:\n    - use:\n      - nowhere\n")
R("invalid_requisite", "use_by_name", "a:\n  file.managed:\n    - name: /x\nb:\n  file.managed:\n    - use:\n      - file: /x\n")
R("invalid_requisite", "use_wrong_module", "a:\n  file.managed:\n    - name: /x\nb:\n  file.managed:\n    - use:\n      - pkg: a\n")
R("invalid_names", "order_in_entry", "a:\n  test.nop:\n    - names:\n      - x:\n        - order: 1\n")
R("invalid_order", "list", "a:\n  test.nop:\n    - order: [1]\n")
