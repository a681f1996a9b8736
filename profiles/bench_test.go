package profiles

import (
	"fmt"
	"strings"
	"testing"

	"github.com/oduflow/oduflow-go/receipt"
)

// source64KiB builds a realistic source of exactly MaxSourceBytes with
// MaxStateIDs ids: file, package, service and command declarations with
// requisites, names, nested values and block scalars, padded by a comment.
func source64KiB(tb testing.TB) []byte {
	tb.Helper()
	var b strings.Builder
	b.WriteString("# benchmark source: 100 state ids, 64 KiB\n")
	for i := range maxStateIDs {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&b, "app_%03d_pkg:\n  pkg.installed:\n    - names:\n      - tool-%03d-a\n      - tool-%03d-b\n    - refresh: false\n", i, i, i)
		case 1:
			fmt.Fprintf(&b, "/etc/app/%03d.conf:\n  file.managed:\n    - user: root\n    - group: app\n    - mode: \"0640\"\n"+
				"    - makedirs: true\n    - contents: |\n        # generated %03d\n        listen = 127.0.0.1:%d\n        workers = %d\n"+
				"        timeout = %d.5\n    - require:\n      - pkg: app_%03d_pkg\n", i, i, 8000+i, i%16+1, i, i-1)
		case 2:
			fmt.Fprintf(&b, "app_%03d_service:\n  service.running:\n    - name: app-%03d\n    - enable: true\n    - reload: true\n"+
				"    - watch:\n      - file: /etc/app/%03d.conf\n  cmd.run:\n    - name: /usr/local/bin/check %03d --strict\n"+
				"    - onchanges:\n      - file: /etc/app/%03d.conf\n", i, i, i-1, i, i-1)
		case 3:
			fmt.Fprintf(&b, "/etc/app/%03d.json:\n  file.serialize:\n    - serializer: json\n    - dataset:\n        id: %d\n"+
				"        tags: [alpha, beta, \"gamma %03d\"]\n        limits: {cpu: 1.5, memory: 512, burst: null}\n"+
				"        peers:\n          - {host: peer-a, port: 7000}\n          - {host: peer-b, port: 7001}\n", i, i, i)
		}
	}
	for b.Len() < MaxSourceBytes-80 {
		b.WriteString("# padding padding padding padding padding padding padding padding padding\n")
	}
	b.WriteString("# " + strings.Repeat("-", MaxSourceBytes-b.Len()-3) + "\n")
	src := []byte(b.String())
	if len(src) != MaxSourceBytes {
		tb.Fatalf("source is %d bytes", len(src))
	}
	return src
}

func TestBenchmarkSourceIsValid(t *testing.T) {
	c, err := CompileCustom(source64KiB(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.HighData) != maxStateIDs {
		t.Fatalf("%d ids", len(c.HighData))
	}
}

// BenchmarkValidateCompileDigest64KiB: validation, compilation, canonical
// JSON and SHA-256 of a 64 KiB, 100-id source (target: well under 5 ms/op).
func BenchmarkValidateCompileDigest64KiB(b *testing.B) {
	src := source64KiB(b)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		c, err := CompileCustom(src)
		if err != nil || len(c.Digest) != 64 {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidateCustomRejectLate64KiB: a 64 KiB source refused at its very
// end (ambiguous scalar in the last id) costs one full pass as well.
func BenchmarkValidateCustomRejectLate64KiB(b *testing.B) {
	src := source64KiB(b)
	bad := append(append([]byte{}, src[:len(src)-40]...), []byte("\nz:\n  test.nop:\n    - v: yes\n")...)
	b.SetBytes(int64(len(bad)))
	b.ReportAllocs()
	for b.Loop() {
		if ValidateCustom(bad) == nil {
			b.Fatal("accepted")
		}
	}
}

// BenchmarkTableRoleAndID: what a table adds to Start before any I/O (the profile's role and the id
// policy check), for the seeds' table and a host-named fleet's.
func BenchmarkTableRoleAndID(b *testing.B) {
	fleet, err := ParseTable([]byte("profiles:\n  webserver: {sls: [roles.webserver, roles.monitoring]}\n"+
		"  full: {highstate: true}\nminion_ids: salt\n"), "b")
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		t      *Table
		p      receipt.Profile
		minion string
	}{
		{"seeds", DefaultTable(), receipt.ProfileConfigure, "client-5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b"},
		{"fleet", fleet, "webserver", "web01.prod.example.com"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tc.t.Role(tc.p); err != nil {
					b.Fatal(err)
				}
				if err := tc.t.ValidateMinionID(tc.minion); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
