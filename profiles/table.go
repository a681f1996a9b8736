package profiles

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/cockroachdb/errors"
	"go.yaml.in/yaml/v3"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/receipt"
)

// IDPolicy is the minion id policy of a profile table (its minion_ids key).
type IDPolicy string

// The two id policies.
const (
	// IDsSeeds: "client-" + lowercase UUID only (receipt.ValidateSeedMinionID), the default.
	IDsSeeds IDPolicy = "seeds"
	// IDsSalt: any Salt minion id of the id policy (receipt.ValidateMinionID), e.g. web01.example.com.
	IDsSalt IDPolicy = "salt"
)

// Limits of a profile table.
const (
	// maxTableBytes bounds a profile table file.
	maxTableBytes = 64 << 10
	// maxTableProfiles bounds how many profiles a table holds.
	maxTableProfiles = 64
	// maxProfileSLS bounds the sls list of one profile.
	maxProfileSLS = 32
	// maxSLSLen bounds one sls name.
	maxSLSLen = 200
)

// seedsTableDigest is DefaultTable's digest, the SHA-256 of its canonical document (table_test.go checks
// it against the computed one): DefaultTable is called on hot paths and need not hash anything.
const seedsTableDigest = "b3daf18418bab82cf150a0dd1cbab4e950396ece33f30c38f1430ffefcbf4537"

// highstateRole is the claim role of a highstate profile: not an sls name (it starts with '@'), so it
// can never be mistaken for one.
const highstateRole = "@highstate"

// ErrInvalidTable matches (errors.Is) every *TableError: a profile table LoadTable or ParseTable refused.
var ErrInvalidTable = errors.New("profiles: invalid profile table")

// TableError names where a profile table is wrong: the file, the line (1-based; 0 for the whole file)
// and the field (a path such as profiles.webserver.sls[1]; a key that is not a valid name is named by
// its position, never echoed). Reason is fixed text of this package.
type TableError struct {
	File   string
	Line   int
	Field  string
	Reason string
}

// Error implements error.
func (e *TableError) Error() string {
	where := e.File
	if where == "" {
		where = "profile table"
	}
	if e.Line > 0 {
		where = fmt.Sprintf("%s:%d", where, e.Line)
	}
	if e.Field != "" {
		return fmt.Sprintf("profiles: %s: %s: %s", where, e.Field, e.Reason)
	}
	return fmt.Sprintf("profiles: %s: %s", where, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidTable) true.
func (e *TableError) Unwrap() error { return ErrInvalidTable }

// tableEntry is one profile: an ordered sls list, or the highstate.
type tableEntry struct {
	sls       []string
	highstate bool
}

// Table is a profile table: which states each profile applies, and which minion ids the fleet uses.
// The zero value is not usable; use DefaultTable, ParseTable or LoadTable. A Table is immutable and
// safe for concurrent use.
type Table struct {
	entries map[receipt.Profile]tableEntry
	ids     IDPolicy
	digest  string
	isSeeds bool
}

// DefaultTable is the seeds' table: the four fixed profiles and their roles (Fixed), minion_ids seeds.
// A dispatcher and a minion without a table of their own use it; its digest is DefaultTableDigest.
func DefaultTable() *Table {
	t := &Table{entries: map[receipt.Profile]tableEntry{}, ids: IDsSeeds, isSeeds: true}
	for p, r := range Fixed() {
		t.entries[p] = tableEntry{sls: []string{string(r)}}
	}
	t.digest = seedsTableDigest
	return t
}

// Digest is the table's SHA-256 (lowercase hex) over the RFC 8785 canonical JSON of its document
// (Document), the same bytes the minion module hashes.
func (t *Table) Digest() string { return t.digest }

// IsDefault reports whether t is the seeds' table (same document as DefaultTable).
func (t *Table) IsDefault() bool { return t.isSeeds }

// MinionIDs is the table's id policy.
func (t *Table) MinionIDs() IDPolicy { return t.ids }

// Profiles lists the table's profiles, sorted (custom is never one).
func (t *Table) Profiles() []receipt.Profile {
	ps := make([]receipt.Profile, 0, len(t.entries))
	for p := range t.entries {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}

// Has reports whether the table holds profile p.
func (t *Table) Has(p receipt.Profile) bool { _, ok := t.entries[p]; return ok }

// States returns what profile p applies: its sls names in order (state.apply a,b), or highstate true
// (state.apply with no argument). A profile the table does not hold is an error matching
// receipt.ErrUnknownProfile; custom is ErrCustomHasNoRole.
func (t *Table) States(p receipt.Profile) (sls []string, highstate bool, err error) {
	defer errmark.Boundary(&err)
	if p == receipt.ProfileCustom {
		return nil, false, errors.WithStack(ErrCustomHasNoRole)
	}
	e, ok := t.entries[p]
	if !ok {
		return nil, false, errors.WithStack(receipt.ErrUnknownProfile)
	}
	return slices.Clone(e.sls), e.highstate, nil
}

// Role is what a claim records for profile p: its sls names joined by ',' (for the seeds' table, the
// role of Fixed, byte for byte), or "@highstate". Errors as States.
func (t *Table) Role(p receipt.Profile) (string, error) {
	sls, hs, err := t.States(p)
	if err != nil {
		return "", err
	}
	if hs {
		return highstateRole, nil
	}
	return strings.Join(sls, ","), nil
}

// ValidateMinionID checks id against the table's id policy: receipt.ValidateSeedMinionID under seeds,
// receipt.ValidateMinionID under salt. The error matches receipt.ErrInvalidID and does not echo id.
func (t *Table) ValidateMinionID(id string) error {
	if t.ids == IDsSalt {
		return receipt.ValidateMinionID(id)
	}
	return receipt.ValidateSeedMinionID(id)
}

// Document is the table's normalized document, the value its digest hashes:
// {"minion_ids": "seeds"|"salt", "profiles": {name: {"sls": [..]} | {"highstate": true}}}.
func (t *Table) Document() map[string]any {
	ps := make(map[string]any, len(t.entries))
	for p, e := range t.entries {
		if e.highstate {
			ps[string(p)] = map[string]any{"highstate": true}
			continue
		}
		l := make([]any, len(e.sls))
		for i, s := range e.sls {
			l[i] = s
		}
		ps[string(p)] = map[string]any{"sls": l}
	}
	return map[string]any{"minion_ids": string(t.ids), "profiles": ps}
}

// MinionConfig renders the minion's side of the table: a minion.d file (YAML) that sets the minion
// config key oduflow_profiles to the table's document (as JSON, which YAML reads unchanged). Install it
// root-owned and not group or world writable, then restart the minion.
func (t *Table) MinionConfig() []byte {
	doc, err := receipt.CanonicalJSON(t.Document())
	if err != nil {
		panic(err) // unreachable: a table's document holds strings and bools only
	}
	var b bytes.Buffer
	b.WriteString("# oduflow profile table (sha256 ")
	b.WriteString(t.digest)
	b.WriteString(")\noduflow_profiles: ")
	b.Write(doc)
	b.WriteByte('\n')
	return b.Bytes()
}

// minionConfigPath is where MinionState and MinionCloudInit put the minion's side of a table: a file of
// the minion's default config directory, read when the minion starts.
const minionConfigPath = "/etc/salt/minion.d/oduflow_profiles.conf"

// MinionState renders a Salt state (SLS) that keeps the minion's side of the table (MinionConfig) in
// /etc/salt/minion.d/oduflow_profiles.conf, root-owned, mode 0644: apply it beside receipt.MinionModule's
// client_receipts state. The minion reads its configuration when it starts: restart it once the file
// changed (until then capabilities report the old table, and the dispatcher refuses it as a mismatch).
func (t *Table) MinionState() []byte {
	var b bytes.Buffer
	b.WriteString("# oduflow_profiles: the minion's side of the oduflow profile table (sha256 " + t.digest + ").\n")
	b.WriteString("# Generated by profiles.Table.MinionState; restart the minion when the file changes.\n\n")
	b.WriteString("oduflow_profiles_config:\n  file.managed:\n    - name: " + minionConfigPath + "\n")
	b.WriteString("    - user: root\n    - group: root\n    - mode: '0644'\n    - makedirs: True\n    - contents: |\n")
	for _, line := range strings.SplitAfter(strings.TrimSuffix(string(t.MinionConfig()), "\n"), "\n") {
		b.WriteString("        " + line)
	}
	b.WriteString("\n")
	return b.Bytes()
}

// MinionCloudInit renders the cloud-config snippet (write_files) that puts the minion's side of the table
// in /etc/salt/minion.d/oduflow_profiles.conf before the minion first starts: merge it with
// receipt.MinionModule's CloudInit.
func (t *Table) MinionCloudInit() []byte {
	var b bytes.Buffer
	b.WriteString("#cloud-config\n# The minion's side of the oduflow profile table (sha256 " + t.digest + "),\n")
	b.WriteString("# written before the minion starts. Generated by profiles.Table.MinionCloudInit.\n")
	b.WriteString("write_files:\n  - path: " + minionConfigPath + "\n    owner: root:root\n    permissions: '0644'\n")
	b.WriteString("    content: |\n")
	for _, line := range strings.SplitAfter(strings.TrimSuffix(string(t.MinionConfig()), "\n"), "\n") {
		b.WriteString("      " + line)
	}
	b.WriteString("\n")
	return b.Bytes()
}

func mustDigest(t *Table) string {
	c, err := receipt.CanonicalJSON(t.Document())
	if err != nil {
		panic(err) // unreachable: strings and bools only
	}
	return receipt.Digest(c)
}

// LoadTable reads a profile table file (ODUFLOW_PROFILES). The file must be a regular file of at most
// maxTableBytes that is not group or world writable (whoever can write it chooses what every minion
// runs); its content is checked as ParseTable does. Errors match ErrInvalidTable (*TableError naming the
// file, line and field) or are the file's I/O error.
func LoadTable(ctx context.Context, path string) (_ *Table, err error) {
	defer errmark.Boundary(&err)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, errors.Wrap(err, "profiles: open the profile table")
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return nil, errors.Wrap(err, "profiles: stat the profile table")
	}
	if !st.Mode().IsRegular() {
		return nil, &TableError{File: path, Reason: "not a regular file"}
	}
	if st.Mode().Perm()&0o022 != 0 {
		return nil, &TableError{File: path, Reason: "group or world writable (chmod go-w): whoever can write it chooses what minions run"}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxTableBytes+1))
	if err != nil {
		return nil, errors.Wrap(err, "profiles: read the profile table")
	}
	return ParseTable(data, path)
}

// ParseTable checks and reads a profile table document; name is how errors name its source (a file
// path). The document is strict YAML:
//
//	profiles:                     # required: 1 to 64 profiles
//	  webserver: {sls: [roles.webserver, roles.monitoring]}   # state.apply roles.webserver,roles.monitoring
//	  full: {highstate: true}     # state.apply with no argument (the top file)
//	minion_ids: salt              # optional: seeds (the default) or salt
//
// Refused, each with its line and field: unknown keys, duplicate keys, anchors, aliases, tags, merge
// keys, profile names not [a-z][a-z0-9_]{0,31}, the reserved custom, an empty or over-long
// (maxProfileSLS) sls list, sls names that are not Salt sls names (see validSLS), both sls and
// highstate, highstate not true, more than maxTableProfiles profiles, several documents.
func ParseTable(data []byte, name string) (_ *Table, err error) {
	defer errmark.Boundary(&err)
	fail := func(line int, field, reason string) error {
		return &TableError{File: name, Line: line, Field: field, Reason: reason}
	}
	if len(data) > maxTableBytes {
		return nil, fail(0, "", fmt.Sprintf("larger than %d bytes", maxTableBytes))
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, fail(0, "", "contains NUL")
	}
	if bytes.Contains(data, []byte("{{")) || bytes.Contains(data, []byte("{%")) || bytes.Contains(data, []byte("{#")) {
		return nil, fail(0, "", "template syntax ({{, {%, {#) is not allowed: the table is plain YAML")
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fail(0, "", "empty document")
		}
		return nil, fail(0, "", "not valid YAML")
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fail(extra.Line, "", "more than one YAML document")
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return nil, fail(root.Line, "", "the top level must be a mapping with profiles and minion_ids")
	}
	if err := plainNode(root, name, ""); err != nil {
		return nil, err
	}
	t := &Table{entries: map[receipt.Profile]tableEntry{}, ids: IDsSeeds}
	var sawProfiles bool
	err = eachPair(root, name, "", func(k string, kn, vn *yaml.Node) error {
		switch k {
		case "minion_ids":
			if vn.Kind != yaml.ScalarNode || vn.Style != 0 && vn.Style != yaml.DoubleQuotedStyle && vn.Style != yaml.SingleQuotedStyle {
				return fail(vn.Line, k, "must be seeds or salt")
			}
			switch IDPolicy(vn.Value) {
			case IDsSeeds, IDsSalt:
				t.ids = IDPolicy(vn.Value)
			default:
				return fail(vn.Line, k, "must be seeds or salt")
			}
		case "profiles":
			sawProfiles = true
			return t.readProfiles(vn, name)
		default:
			return fail(kn.Line, "top level", "unknown key (want profiles, minion_ids)")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !sawProfiles {
		return nil, fail(root.Line, "profiles", "missing")
	}
	t.digest = mustDigest(t)
	t.isSeeds = t.digest == seedsTableDigest
	return t, nil
}

func (t *Table) readProfiles(vn *yaml.Node, file string) error {
	fail := func(line int, field, reason string) error {
		return &TableError{File: file, Line: line, Field: field, Reason: reason}
	}
	if vn.Kind != yaml.MappingNode || len(vn.Content) == 0 {
		return fail(vn.Line, "profiles", "must be a mapping of 1 to 64 profiles")
	}
	if len(vn.Content)/2 > maxTableProfiles {
		return fail(vn.Line, "profiles", fmt.Sprintf("more than %d profiles", maxTableProfiles))
	}
	return eachPair(vn, file, "profiles", func(k string, kn, pn *yaml.Node) error {
		p := receipt.Profile(k)
		if p == receipt.ProfileCustom {
			return fail(kn.Line, "profiles.custom", "custom is reserved (custom states are bound by their digest)")
		}
		if !p.ValidName() {
			return fail(kn.Line, fmt.Sprintf("profiles[%d]", len(t.entries)+1), "profile name must match [a-z][a-z0-9_]{0,31}")
		}
		field := "profiles." + k
		if pn.Kind != yaml.MappingNode || len(pn.Content) == 0 {
			return fail(pn.Line, field, "must be {sls: [...]} or {highstate: true}")
		}
		var e tableEntry
		var sawSLS, sawHS bool
		err := eachPair(pn, file, field, func(kk string, kkn, v *yaml.Node) error {
			switch kk {
			case "sls":
				sawSLS = true
				if v.Kind != yaml.SequenceNode || len(v.Content) == 0 || len(v.Content) > maxProfileSLS {
					return fail(v.Line, field+".sls", fmt.Sprintf("must be a list of 1 to %d sls names", maxProfileSLS))
				}
				for i, s := range v.Content {
					f := fmt.Sprintf("%s.sls[%d]", field, i)
					if s.Kind != yaml.ScalarNode {
						return fail(s.Line, f, "must be an sls name")
					}
					if s.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
						return fail(s.Line, f, "block scalars are not sls names")
					}
					if s.Style == 0 {
						if v, cerr := resolvePlain(s.Value, s.Tag); cerr != nil || v != s.Value {
							return fail(s.Line, f, "not a string in every YAML version: quote it or rename the sls")
						}
					}
					if !validSLS(s.Value) {
						return fail(s.Line, f, "not a Salt sls name ([A-Za-z0-9_-] segments joined by '.', at most 200 bytes)")
					}
					if slices.Contains(e.sls, s.Value) {
						return fail(s.Line, f, "listed twice")
					}
					e.sls = append(e.sls, s.Value)
				}
			case "highstate":
				sawHS = true
				if v.Kind != yaml.ScalarNode || v.Style != 0 || v.Tag != "!!bool" || (v.Value != "true" && v.Value != "True" && v.Value != "TRUE") {
					return fail(v.Line, field+".highstate", "must be true (leave it out otherwise)")
				}
				e.highstate = true
			default:
				return fail(kkn.Line, field, "unknown key (want sls or highstate)")
			}
			return nil
		})
		if err != nil {
			return err
		}
		if sawSLS && sawHS {
			return fail(pn.Line, field, "sls and highstate are exclusive")
		}
		t.entries[p] = e
		return nil
	})
}

// eachPair walks a mapping's pairs in order: keys must be plain or quoted strings, each once.
func eachPair(m *yaml.Node, file, field string, f func(k string, kn, vn *yaml.Node) error) error {
	seen := make(map[string]bool, len(m.Content)/2)
	for i := 0; i+1 < len(m.Content); i += 2 {
		kn, vn := m.Content[i], m.Content[i+1]
		if kn.Kind != yaml.ScalarNode || kn.Tag != "!!str" {
			return &TableError{File: file, Line: kn.Line, Field: orTop(field), Reason: "keys must be strings"}
		}
		if seen[kn.Value] {
			return &TableError{File: file, Line: kn.Line, Field: orTop(field), Reason: "duplicate key"}
		}
		seen[kn.Value] = true
		if err := f(kn.Value, kn, vn); err != nil {
			return err
		}
	}
	return nil
}

func orTop(field string) string {
	if field == "" {
		return "top level"
	}
	return field
}

// plainNode refuses anchors, aliases, explicit tags and merge keys anywhere under n.
func plainNode(n *yaml.Node, file, field string) error {
	if n.Anchor != "" || n.Kind == yaml.AliasNode {
		return &TableError{File: file, Line: n.Line, Reason: "anchors and aliases are not allowed"}
	}
	if n.Style&yaml.TaggedStyle != 0 {
		return &TableError{File: file, Line: n.Line, Reason: "explicit tags are not allowed"}
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!merge" {
		return &TableError{File: file, Line: n.Line, Reason: "merge keys are not allowed"}
	}
	for _, c := range n.Content {
		if err := plainNode(c, file, field); err != nil {
			return err
		}
	}
	return nil
}

// validSLS reports whether s is a Salt sls name a table may list: segments of ASCII letters, digits,
// '_' and '-' joined by single dots, at most 200 bytes. No empty segment (so no "..", leading or
// trailing dot), no '/', no glob, Jinja or whitespace character, nothing outside ASCII; and a segment
// never starts with '-' (an option to a shell) .
func validSLS(s string) bool {
	if len(s) == 0 || len(s) > maxSLSLen {
		return false
	}
	segStart := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
			segStart = false
		case c == '-':
			if segStart {
				return false
			}
		case c == '.':
			if segStart {
				return false
			}
			segStart = true
		default:
			return false
		}
	}
	return !segStart
}
