// Package profiles owns what may ever reach Salt: the profile tables (the
// seeds' fixed profile -> role table and an operator's own), and custom state
// sources (validation, compilation to Salt high data, canonical JSON and its
// SHA-256 digest). It imports only receipt (and the internal error marks).
//
// # Profile tables
//
// A Table maps each profile to an ordered list of Salt sls names (applied as
// state.apply a,b) or to the highstate (state.apply with no argument), and
// names the fleet's minion id policy (IDsSeeds: client-<uuid>; IDsSalt: any
// id of receipt.ValidateMinionID). LoadTable reads one from a file (at most
// 64 KiB, not group or world writable), ParseTable from memory:
//
//	profiles:
//	  webserver: {sls: [roles.webserver, roles.monitoring]}
//	  full: {highstate: true}
//	minion_ids: salt
//
// Refused, as a *TableError (errors.Is ErrInvalidTable) naming the file, the
// line and the field, never echoing a value that is not a valid name: unknown
// or duplicate keys, anchors, aliases, tags, merge keys, template syntax,
// several documents, profile names not [a-z][a-z0-9_]{0,31}, the reserved
// custom, an empty list or more than 32 sls names, sls names that are not
// [A-Za-z0-9_-] segments joined by single dots (at most 200 bytes; a segment
// never starts with '-'), an sls listed twice, a plain scalar that YAML 1.1
// and 1.2 read differently, sls and highstate together, highstate not true,
// more than 64 profiles. Table.Digest is the SHA-256 of the RFC 8785
// canonical JSON of Table.Document, the same bytes the minion module hashes
// for its oduflow_profiles; DefaultTable is the seeds' table below, the
// default on both sides, and Table.MinionConfig the minion's side of a table.
//
// # Fixed profiles
//
// RoleFor and Fixed map the four fixed profiles to compiled-in roles
// (configure -> roles.client_stack, production -> roles.client_production,
// volume_resize -> roles.client_storage_resize, credentials ->
// roles.client_credentials). No caller supplies a state name, function,
// argument, pillar or path. The custom profile has no role
// (ErrCustomHasNoRole): it runs the high data of CompileCustom, bound by its
// digest.
//
// # Custom sources
//
// ValidateCustom and CompileCustom read plain YAML with go.yaml.in/yaml/v3 at
// the node level (yaml.Node), so anchors, aliases, tags and duplicate keys are
// seen rather than resolved. Nothing is executed, rendered or resolved. Limits:
// MaxSourceBytes (64 KiB), 100 state ids, a depth of 16 (nested lists and
// mappings, the top-level mapping counting as 1), 1000 entries per
// list or mapping, 16 KiB per scalar. Refused, each with a stable
// code (see Error codes) and a line and column (1-based, column in characters; yaml_syntax
// positions are the parser's and approximate): template syntax ({{ {% {#, in
// comments too: Salt's default renderer is jinja|yaml), renderer directives
// (#! lines), YAML directives, anchors, aliases, explicit tags (including
// "!"), merge keys, duplicate keys at any depth, include/extend/exclude,
// functions that are not module.function, arguments that are not a list of
// single-key mappings, two functions of one module under one id, explicit
// parallel, reserved ids and arguments, non-string ids, keys and names,
// malformed requisites, names and order, invalid UTF-8, control characters,
// several documents, an empty document, a top level that is not a mapping.
// A *CustomError never contains source text: its messages are constants.
//
// # Scalars: one meaning in YAML 1.1 (Salt) and YAML 1.2
//
// Salt reads sls YAML with PyYAML (YAML 1.1 resolvers) through
// SaltYamlSafeLoader; yaml.v3 and most editors follow YAML 1.2. A plain scalar
// is accepted only where both agree (checked against Salt's own loader in
// scalar_test.go, testdata/scalars.salt.json):
//
//   - null: empty, ~, null, Null, NULL; bool: true/True/TRUE, false/False/FALSE;
//   - int: -?(0|[1-9][0-9]*) within ±2^53; float: -?(0|[1-9][0-9]*)\.[0-9]+
//     whose value is not integral (2.0 would travel as the JSON integer 2);
//   - every other plain scalar is a string, including dates and timestamps
//     such as 2001-12-14 (SaltYamlSafeLoader constructs timestamps with
//     construct_scalar: Salt reads the literal string).
//
// Refused with code ambiguous_scalar (quote the value, or write true/false or a
// plain decimal): yes/no/on/off in any case and y/n (booleans in YAML 1.1),
// 0644 and 007 (PyYAML octal, which Salt 3006 even turns into decimal 644 by
// stripping the zeros), 0o644, 0x1F, 0b101, 1_000, 1:30 (sexagesimal), 1e3,
// 1.5e+3, .5, 1., +1, .inf, .nan, "=", integral floats; integers beyond ±2^53
// get number_out_of_range. Quoted, literal and folded scalars are always
// strings. NEL, U+2028 and U+2029 (line breaks only in YAML 1.1) are refused.
//
// # High data
//
// The result is what Salt 3006 renders from the same YAML saved as
// salt://oduflow/custom.sls in saltenv base (salt/state.py
// BaseHighState.render_state: _handle_state_decls then _handle_iorder), which
// state.high then verifies and compiles (State.call_high: verify_high,
// requisite_in, compile_high_data, order_chunks):
//
//	{"<id>": {"<module>": ["<function>", {"<arg>": <value>}, ..., {"order": 10000}],
//	          "__sls__": "oduflow.custom", "__env__": "base"}}
//
// In detail:
//
//   - "pkg.installed: [...]" becomes "pkg: [installed, ...]" and the short form
//     "id: pkg.installed" becomes "pkg: [installed]", as _handle_state_decls does.
//   - __sls__ is "oduflow.custom", __env__ is "base":
//     the values of the vector captured from state.high, and what an sls named
//     oduflow.custom gets, so "- sls: oduflow.custom" requisites mean the source.
//   - Salt gives each declaration without an explicit order the implicit
//     {"order": n}, n = 10000, 10001, ... in source order (BaseHighState.iorder,
//     state_auto_order: True). state.high alone would sort unordered chunks by
//     name instead, so the orders are compiled in: execution order matches the
//     sls. This makes the order of ids and of functions within an id part of
//     the meaning and of the digest.
//   - The one deliberate difference from render_state: the function name comes
//     first and the argument mappings are sorted by name (also inside names
//     entries). verify_high, requisite_in and compile_high_data never depend on
//     list positions, and duplicate argument names are refused, so the meaning
//     is unchanged while reordering arguments does not change the digest.
//   - name, names and requisites (require, watch, onchanges, onfail, prereq,
//     listen, use, their _any/_all/_in forms) are kept verbatim after their
//     shape is checked: requisites are lists of ids or {module: id} mappings,
//     exactly as in an sls, so Salt evaluates them the same way. Whether a
//     requisite target exists is Salt's to report.
//   - Where Salt's evaluation depends on dictionary or argument order (the
//     minion receives JSON sorted by key), the compiler fixes the outcome the
//     sls would have: plain-string targets of requisite_in-style requisites are
//     converted as State.requisite_in converts them, in source order; use and
//     use_in must target ids; mutual requisites and explicit order ties are
//     refused. semantics.go lists each case with the Salt code involved.
//
// # Error codes
//
// CustomError.Code is one of these stable strings (codes never change meaning;
// new ones may be added). Test for a refusal with errors.Is(err,
// ErrInvalidCustom) and read the code with errors.As into a *CustomError.
//
//	too_large              more than MaxSourceBytes (64 KiB)
//	invalid_utf8           not valid UTF-8
//	invalid_character      NUL, control, NEL, U+2028/9, non-leading BOM, ...
//	template_syntax        "{{", "{%" or "{#" anywhere, comments included
//	renderer_directive     a line starting with "#!"
//	yaml_directive         a %YAML or %TAG directive line
//	yaml_syntax            the YAML parser refused the source
//	multiple_documents     more than one YAML document
//	empty_document         nothing, null, or an empty mapping
//	not_mapping            the top level is not a mapping
//	anchor                 &anchor
//	alias                  *alias
//	explicit_tag           !tag, !!type, or the non-specific "!"
//	merge_key              a plain "<<"
//	duplicate_key          the same key twice in one mapping, any depth
//	too_deep               more than 16 nested collections
//	too_many_ids           more than 100 state ids
//	too_many_items         a list or mapping longer than 1000
//	scalar_too_long        a scalar longer than 16 KiB
//	non_string_key         a key (id, argument, nested) that is not a string
//	ambiguous_scalar       a plain scalar YAML 1.1 and 1.2 read differently: quote it
//	number_out_of_range    an integer beyond ±2^53
//	forbidden_declaration  include, extend or exclude
//	invalid_id             empty, "__"-reserved, control characters, "_|-"
//	invalid_state          an id whose value is not a declaration mapping
//	invalid_function       not a full module.function
//	duplicate_module       two functions of one module under one id
//	arguments_not_list     a function whose value is not a list
//	invalid_argument       a list item that is not a single-key mapping
//	duplicate_argument     the same argument twice for one function
//	reserved_argument      fun, state, prerequired, __*
//	parallel_forbidden     an explicit parallel argument
//	invalid_requisite      a requisite that is not a list of ids or {module: id}
//	requisite_cycle        two ids that require/watch/prereq/onchange each other
//	invalid_name           name that is not a string
//	invalid_names          names that is not a list of strings or {name: [args]}
//	invalid_order          order that is not an integer within ±100000, "first" or "last"
//	ambiguous_order        explicit orders Salt would break by id order
//	not_canonical          canonical JSON refused the compiled data (not expected)
//
// # Canonical form
//
// Canonical is receipt.CanonicalJSON (RFC 8785) of the high data and Digest its
// hex SHA-256: formatting, comments, quoting style, flow or block style,
// mapping key order and argument order do not change the digest; any change
// of meaning does (testdata/custom holds the corpus, digest_test.go the
// stability cases).
package profiles
