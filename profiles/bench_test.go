package profiles

import (
	"testing"

	"github.com/oduflow/oduflow-go/internal/benchsource"
	"github.com/oduflow/oduflow-go/receipt"
)

// source64KiB is the benchmarks' source: exactly MaxSourceBytes with MaxStateIDs ids (benchsource.SLS, the
// same bytes as bench.sh's CPU row).
func source64KiB(tb testing.TB) []byte {
	tb.Helper()
	src, err := benchsource.SLS(MaxSourceBytes, maxStateIDs)
	if err != nil {
		tb.Fatal(err)
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
