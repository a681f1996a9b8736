package profiles

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
	"go.yaml.in/yaml/v3"

	"github.com/oduflow/oduflow-go/receipt"
)

// defaultTableDigest pins the seeds' table digest: the value every module without oduflow_profiles is
// presumed to hold, and that the Python module computes for its _SEEDS_TABLE (the Python suite checks
// the same constant).
const defaultTableDigest = "b3daf18418bab82cf150a0dd1cbab4e950396ece33f30c38f1430ffefcbf4537"

func TestDefaultTableIsTheSeeds(t *testing.T) {
	d := DefaultTable()
	if !d.IsDefault() || d.MinionIDs() != IDsSeeds || len(d.Profiles()) != 4 {
		t.Fatalf("%+v", d)
	}
	c, err := receipt.CanonicalJSON(d.Document())
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"minion_ids":"seeds","profiles":{"configure":{"sls":["roles.client_stack"]},` +
		`"credentials":{"sls":["roles.client_credentials"]},"production":{"sls":["roles.client_production"]},` +
		`"volume_resize":{"sls":["roles.client_storage_resize"]}}}`
	if string(c) != want {
		t.Fatalf("document %s", c)
	}
	if d.Digest() != receipt.Digest(c) || mustDigest(d) != seedsTableDigest {
		t.Fatal("digest is not the SHA-256 of the canonical document")
	}
	if d.Digest() != defaultTableDigest {
		t.Fatalf("default digest %s (pinned %s)", d.Digest(), defaultTableDigest)
	}
	// The claim roles of the default table are Fixed's, byte for byte.
	for p, r := range Fixed() {
		got, err := d.Role(p)
		if err != nil || got != string(r) {
			t.Fatalf("%s: %q %v", p, got, err)
		}
	}
	if _, err := d.Role(receipt.ProfileCustom); !errors.Is(err, ErrCustomHasNoRole) {
		t.Fatal(err)
	}
	if _, _, err := d.States("webserver"); !errors.Is(err, receipt.ErrUnknownProfile) {
		t.Fatal(err)
	}
	// The same document written as a file is the default table, in any key order and style.
	tb, err := ParseTable([]byte("minion_ids: seeds\nprofiles:\n  volume_resize: {sls: [roles.client_storage_resize]}\n"+
		"  configure:\n    sls:\n      - roles.client_stack\n  credentials: {sls: ['roles.client_credentials']}\n"+
		"  production: {sls: [\"roles.client_production\"]}\n"), "seeds.yaml")
	if err != nil || !tb.IsDefault() || tb.Digest() != d.Digest() {
		t.Fatalf("%v", err)
	}
}

func TestParseTable(t *testing.T) {
	tb, err := ParseTable([]byte(`# the fleet's table
profiles:
  webserver: {sls: [roles.webserver, roles.monitoring]}   # in this order
  full: {highstate: true}
minion_ids: salt
`), "fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if tb.IsDefault() || tb.MinionIDs() != IDsSalt || !slices.Equal(tb.Profiles(), []receipt.Profile{"full", "webserver"}) {
		t.Fatalf("%+v", tb)
	}
	sls, hs, err := tb.States("webserver")
	if err != nil || hs || !slices.Equal(sls, []string{"roles.webserver", "roles.monitoring"}) {
		t.Fatalf("webserver %v %v %v", sls, hs, err)
	}
	if r, _ := tb.Role("webserver"); r != "roles.webserver,roles.monitoring" {
		t.Fatal(r)
	}
	if _, hs, _ := tb.States("full"); !hs {
		t.Fatal("full is not the highstate")
	}
	if r, _ := tb.Role("full"); r != "@highstate" {
		t.Fatal(r)
	}
	if tb.ValidateMinionID("web01.lab.example") != nil || !errors.Is(tb.ValidateMinionID("web*"), receipt.ErrInvalidID) {
		t.Fatal("id policy salt")
	}
	if !errors.Is(DefaultTable().ValidateMinionID("web01.lab.example"), receipt.ErrInvalidID) {
		t.Fatal("id policy seeds")
	}
	// The minion's side: a minion.d file whose oduflow_profiles is the canonical document.
	mc := string(tb.MinionConfig())
	if !strings.Contains(mc, "oduflow_profiles: {\"minion_ids\":\"salt\",\"profiles\":{\"full\":{\"highstate\":true},"+
		"\"webserver\":{\"sls\":[\"roles.webserver\",\"roles.monitoring\"]}}}\n") || !strings.Contains(mc, tb.Digest()) {
		t.Fatalf("minion config %s", mc)
	}
	// The order of the sls list is part of the table (and of its digest).
	other, err := ParseTable([]byte("profiles:\n  webserver: {sls: [roles.monitoring, roles.webserver]}\n  full: {highstate: true}\nminion_ids: salt\n"), "x")
	if err != nil || other.Digest() == tb.Digest() {
		t.Fatalf("order not bound: %v", err)
	}
}

// Every bad table is refused with the file, its line and its field; nothing from the document but
// valid names is echoed.
func TestParseTableRefusals(t *testing.T) {
	many := "profiles:\n"
	for i := range 65 {
		many += fmt.Sprintf("  p%d: {sls: [a]}\n", i)
	}
	longList := "profiles:\n  web: {sls: [" + strings.Repeat("a,", 32) + "b]}\n"
	for _, tc := range []struct {
		name, doc string
		line      int
		field     string
	}{
		{"empty", "", 0, ""},
		{"not a mapping", "- a\n", 1, ""},
		{"unknown top key", "profiles:\n  web: {sls: [a]}\nextra: 1\n", 3, "top level"},
		{"missing profiles", "minion_ids: salt\n", 1, "profiles"},
		{"duplicate top key", "profiles:\n  web: {sls: [a]}\nprofiles:\n  db: {sls: [b]}\n", 3, "top level"},
		{"duplicate profile", "profiles:\n  web: {sls: [a]}\n  web: {sls: [b]}\n", 3, "profiles"},
		{"reserved custom", "profiles:\n  web: {sls: [a]}\n  custom: {sls: [b]}\n", 3, "profiles.custom"},
		{"upper-case name", "profiles:\n  Web: {sls: [a]}\n", 2, "profiles[1]"},
		{"name with dash", "profiles:\n  web: {sls: [a]}\n  web-server: {sls: [a]}\n", 3, "profiles[2]"},
		{"name too long", "profiles:\n  " + strings.Repeat("a", 33) + ": {sls: [a]}\n", 2, "profiles[1]"},
		{"name leading digit", "profiles:\n  1web: {sls: [a]}\n", 2, "profiles[1]"},
		{"empty sls list", "profiles:\n  web: {sls: []}\n", 2, "profiles.web.sls"},
		{"sls not a list", "profiles:\n  web: {sls: roles.web}\n", 2, "profiles.web.sls"},
		{"sls list too long", longList, 2, "profiles.web.sls"},
		{"empty segment", "profiles:\n  web:\n    sls:\n      - roles..web\n", 4, "profiles.web.sls[0]"},
		{"leading dot", "profiles:\n  web: {sls: [.roles]}\n", 2, "profiles.web.sls[0]"},
		{"trailing dot", "profiles:\n  web: {sls: [roles.]}\n", 2, "profiles.web.sls[0]"},
		{"slash", "profiles:\n  web: {sls: [roles/web]}\n", 2, "profiles.web.sls[0]"},
		{"glob", "profiles:\n  web: {sls: ['roles.*']}\n", 2, "profiles.web.sls[0]"},
		{"jinja", "profiles:\n  web: {sls: ['roles.{{ x }}']}\n", 0, ""},
		{"jinja block", "profiles:\n  web: {sls: [a]}\n# {% if %}\n", 0, ""},
		{"whitespace", "profiles:\n  web: {sls: ['roles web']}\n", 2, "profiles.web.sls[0]"},
		{"non-ASCII", "profiles:\n  web: {sls: [rôles.web]}\n", 2, "profiles.web.sls[0]"},
		{"leading dash segment", "profiles:\n  web: {sls: [roles.-web]}\n", 2, "profiles.web.sls[0]"},
		{"sls twice", "profiles:\n  web: {sls: [a, b, a]}\n", 2, "profiles.web.sls[2]"},
		{"sls a number", "profiles:\n  web: {sls: [1.5]}\n", 2, "profiles.web.sls[0]"},
		{"sls a YAML 1.1 bool", "profiles:\n  web: {sls: [yes]}\n", 2, "profiles.web.sls[0]"},
		{"sls over-long", "profiles:\n  web: {sls: [" + strings.Repeat("a", 201) + "]}\n", 2, "profiles.web.sls[0]"},
		{"sls and highstate", "profiles:\n  web: {sls: [a], highstate: true}\n", 2, "profiles.web"},
		{"highstate false", "profiles:\n  web: {highstate: false}\n", 2, "profiles.web.highstate"},
		{"highstate yes", "profiles:\n  web: {highstate: yes}\n", 2, "profiles.web.highstate"},
		{"highstate quoted", "profiles:\n  web: {highstate: 'true'}\n", 2, "profiles.web.highstate"},
		{"unknown profile key", "profiles:\n  web: {sls: [a], pillar: {x: 1}}\n", 2, "profiles.web"},
		{"empty profile", "profiles:\n  web: {}\n", 2, "profiles.web"},
		{"too many profiles", many, 2, "profiles"},
		{"bad minion_ids", "profiles:\n  web: {sls: [a]}\nminion_ids: any\n", 3, "minion_ids"},
		{"anchor", "profiles:\n  web: &x {sls: [a]}\n  db: *x\n", 2, ""},
		{"tag", "profiles:\n  web: !!map {sls: [a]}\n", 2, ""},
		{"two documents", "profiles:\n  web: {sls: [a]}\n---\nprofiles:\n  db: {sls: [b]}\n", 3, ""},
		{"not YAML", "profiles: [\n", 0, ""},
		{"NUL", "profiles:\n  web: {sls: [a]}\x00\n", 0, ""},
	} {
		_, err := ParseTable([]byte(tc.doc), "t.yaml")
		var te *TableError
		if !errors.As(err, &te) || !errors.Is(err, ErrInvalidTable) {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if te.File != "t.yaml" || te.Line != tc.line || te.Field != tc.field || te.Reason == "" {
			t.Errorf("%s: %+v (want line %d field %q)", tc.name, te, tc.line, tc.field)
		}
		want := "t.yaml"
		if tc.line > 0 {
			want = fmt.Sprintf("t.yaml:%d", tc.line)
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "profiles: "+want+": ") || strings.Contains(msg, "\n") ||
			strings.Contains(msg, "roles web") || strings.Contains(msg, "rôles") || strings.Contains(msg, "Web:") {
			t.Errorf("%s: message %q", tc.name, msg)
		}
	}
}

// LoadTable refuses a file that group or world can write (whoever can write it chooses what minions
// run), a directory and a file over the size limit, naming the file.
func TestLoadTableFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "profiles.yaml")
	if err := os.WriteFile(path, []byte("profiles:\n  web: {sls: [roles.web]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTable(ctx, path); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o664, 0o646, 0o666} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		var te *TableError
		if _, err := LoadTable(ctx, path); !errors.As(err, &te) || te.File != path || !strings.Contains(te.Reason, "writable") {
			t.Fatalf("mode %o: %v", mode, err)
		}
	}
	if _, err := LoadTable(ctx, dir); !errors.Is(err, ErrInvalidTable) {
		t.Fatalf("directory: %v", err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("profiles:\n  web: {sls: [a]}\n#"+strings.Repeat("x", maxTableBytes)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTable(ctx, big); !errors.Is(err, ErrInvalidTable) {
		t.Fatalf("big: %v", err)
	}
	if _, err := LoadTable(ctx, filepath.Join(dir, "absent")); err == nil || errors.Is(err, ErrInvalidTable) {
		t.Fatalf("absent: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := LoadTable(cancelled, path); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// Property: a table rendered from random valid parts parses back to the same profiles, its digest
// is that of its document, and rendering it again (any order of keys) gives the same digest.
func TestParseTableProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 29))
	segChars := "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"
	nameChars := "abcdefghijklmnopqrstuvwxyz0123456789_"
	seg := func() string {
		b := []byte{segChars[r.IntN(53)]} // not '-' first; letters, digits, '_'... (53: no '-' at index 62)
		for range r.IntN(6) {
			b = append(b, segChars[r.IntN(len(segChars))])
		}
		return string(b)
	}
	for iter := range 300 {
		want := map[string][]string{} // nil: highstate
		var order []string
		for len(want) < 1+r.IntN(8) {
			name := string(rune('a' + r.IntN(26)))
			for range r.IntN(10) {
				name += string(nameChars[r.IntN(len(nameChars))])
			}
			if name == "custom" || want[name] != nil {
				continue
			}
			if _, ok := want[name]; ok {
				continue
			}
			if r.IntN(4) == 0 {
				want[name] = nil
			} else {
				var sls []string
				for range 1 + r.IntN(4) {
					parts := []string{seg()}
					for range r.IntN(3) {
						parts = append(parts, seg())
					}
					s := strings.Join(parts, ".")
					if !slices.Contains(sls, s) {
						sls = append(sls, s)
					}
				}
				want[name] = sls
			}
			order = append(order, name)
		}
		render := func(order []string) string {
			var b strings.Builder
			if r.IntN(2) == 0 {
				b.WriteString("minion_ids: salt\n")
			}
			b.WriteString("profiles:\n")
			for _, n := range order {
				if want[n] == nil {
					b.WriteString("  " + n + ": {highstate: true}\n")
					continue
				}
				quoted := make([]string, len(want[n]))
				for i, s := range want[n] {
					quoted[i] = "'" + s + "'"
				}
				b.WriteString("  " + n + ": {sls: [" + strings.Join(quoted, ", ") + "]}\n")
			}
			return b.String()
		}
		doc := render(order)
		tb, err := ParseTable([]byte(doc), "p.yaml")
		if err != nil {
			t.Fatalf("iteration %d: %v\n%s", iter, err, doc)
		}
		for n, sls := range want {
			got, hs, err := tb.States(receipt.Profile(n))
			if err != nil || hs != (sls == nil) || !slices.Equal(got, sls) {
				t.Fatalf("iteration %d %s: %v %v %v", iter, n, got, hs, err)
			}
		}
		c, _ := receipt.CanonicalJSON(tb.Document())
		if tb.Digest() != receipt.Digest(c) {
			t.Fatal("digest")
		}
		back, err := ParseTable(c, "canonical.json") // JSON is YAML: the canonical document reads back
		if err != nil || back.Digest() != tb.Digest() {
			t.Fatalf("canonical document: %v", err)
		}
		slices.Reverse(order)
		if again, err := ParseTable([]byte(render(order)), "p.yaml"); err != nil ||
			(again.MinionIDs() == tb.MinionIDs() && again.Digest() != tb.Digest()) {
			t.Fatalf("reordered: %v", err)
		}
	}
}

// FuzzParseTable: any input is a table or a *TableError (never a panic); a table's canonical document
// parses back to the same digest, and every sls name in it passes validSLS.
func FuzzParseTable(f *testing.F) {
	for _, s := range []string{
		"profiles:\n  webserver: {sls: [roles.webserver, roles.monitoring]}\n  full: {highstate: true}\nminion_ids: salt\n",
		"profiles:\n  configure: {sls: [roles.client_stack]}\n",
		"profiles:\n  web: {sls: [a, a]}\n",
		"profiles:\n  custom: {highstate: true}\n",
		"profiles: &a {web: *a}\n",
		"profiles:\n  web: {sls: ['roles.{{x}}']}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tb, err := ParseTable(data, "f.yaml")
		if err != nil {
			var te *TableError
			if !errors.As(err, &te) || !errors.Is(err, ErrInvalidTable) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v", err)
			}
			return
		}
		if len(tb.Profiles()) == 0 || len(tb.Profiles()) > maxTableProfiles {
			t.Fatalf("%d profiles", len(tb.Profiles()))
		}
		for _, p := range tb.Profiles() {
			if p == receipt.ProfileCustom || !p.ValidName() {
				t.Fatalf("profile %q", p)
			}
			sls, hs, err := tb.States(p)
			if err != nil || hs == (len(sls) > 0) || len(sls) > maxProfileSLS {
				t.Fatalf("%q: %v %v %v", p, sls, hs, err)
			}
			for _, s := range sls {
				if !validSLS(s) {
					t.Fatalf("sls %q", s)
				}
			}
		}
		c, err := receipt.CanonicalJSON(tb.Document())
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseTable(c, "canonical.json")
		if err != nil || back.Digest() != tb.Digest() {
			t.Fatalf("canonical document does not read back: %v", err)
		}
	})
}

// The minion's side of a table in each form carries exactly MinionConfig: the minion.d file's
// oduflow_profiles reads back (as YAML, as Salt reads it) to the table's document and digest.
func TestMinionSideRenderings(t *testing.T) {
	tb, err := ParseTable([]byte("profiles:\n  webserver: {sls: [roles.webserver, roles.monitoring]}\n  full: {highstate: true}\nminion_ids: salt\n"), "t")
	if err != nil {
		t.Fatal(err)
	}
	readBack := func(conf []byte) {
		t.Helper()
		var m map[string]any
		if err := yaml.Unmarshal(conf, &m); err != nil {
			t.Fatal(err)
		}
		c, err := receipt.CanonicalJSON(m["oduflow_profiles"])
		if err != nil || receipt.Digest(c) != tb.Digest() {
			t.Fatalf("minion config does not read back: %s %v", c, err)
		}
	}
	readBack(tb.MinionConfig())
	var state map[string]map[string][]map[string]any
	if err := yaml.Unmarshal(tb.MinionState(), &state); err != nil {
		t.Fatal(err)
	}
	args := map[string]any{}
	for _, kv := range state["oduflow_profiles_config"]["file.managed"] {
		for k, v := range kv {
			args[k] = v
		}
	}
	if args["name"] != "/etc/salt/minion.d/oduflow_profiles.conf" || args["mode"] != "0644" || args["user"] != "root" {
		t.Fatalf("state %v", args)
	}
	readBack([]byte(args["contents"].(string)))
	if strings.Contains(string(tb.MinionState()), "{{") || strings.Contains(string(tb.MinionState()), "{%") {
		t.Fatal("the state would render Jinja")
	}
	var ci struct {
		WriteFiles []struct {
			Path, Owner, Permissions, Content string
		} `yaml:"write_files"`
	}
	if err := yaml.Unmarshal(tb.MinionCloudInit(), &ci); err != nil || len(ci.WriteFiles) != 1 {
		t.Fatalf("cloud-init %v", err)
	}
	if w := ci.WriteFiles[0]; w.Path != "/etc/salt/minion.d/oduflow_profiles.conf" || w.Permissions != "0644" || w.Owner != "root:root" {
		t.Fatalf("cloud-init %+v", w)
	}
	readBack([]byte(ci.WriteFiles[0].Content))
	if !strings.HasPrefix(string(tb.MinionCloudInit()), "#cloud-config\n") {
		t.Fatal("not a cloud-config")
	}
}
