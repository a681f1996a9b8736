package etcdstore

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/receipt"
)

// TestCatalogDecodeHostile: every catalog record decoder refuses what this package never writes with
// catalog.ErrCorrupt (standard library errors.Is), and accepts what catEncode wrote.
func TestCatalogDecodeHostile(t *testing.T) {
	id, minion := receipt.NewRequestID(), "client-"+receipt.NewRequestID()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	d := catalog.Definition{ID: id, Company: "acme", Name: "web", Source: []byte("x"), Revision: 1,
		Digest: receipt.Digest([]byte("{}")), CreatedAt: now, UpdatedAt: now}
	good, err := catEncode(d)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := decodeDefinition(&mvccpb.KeyValue{Value: []byte(good)}, id); err != nil || got.Name != "web" {
		t.Fatalf("a record catEncode wrote: %+v %v", got, err)
	}
	rest := good[1:]
	for name, data := range map[string]string{
		"empty":           "",
		"not json":        "\x00\xff",
		"array":           "[]",
		"trailing":        good + "{}",
		"duplicate key":   `{"name":"evil",` + rest,
		"case folded":     `{"Name":"evil",` + rest,
		"unknown field":   `{"extra":1,` + rest,
		"another id":      strings.Replace(good, id, receipt.NewRequestID(), 1),
		"revision 0":      strings.Replace(good, `"revision":1`, `"revision":0`, 1),
		"bad digest":      strings.Replace(good, d.Digest, "zz", 1),
		"control in name": strings.Replace(good, `"name":"web"`, `"name":"w\u0007b"`, 1),
		"oversized":       good + strings.Repeat(" ", maxCatalogRecordSize),
	} {
		if _, err := decodeDefinition(&mvccpb.KeyValue{Value: []byte(data)}, id); !errors.Is(err, catalog.ErrCorrupt) {
			t.Errorf("definition %s: %v", name, err)
		}
	}
	for name, data := range map[string]string{
		"pointer to itself":   `{"request_id":"` + id + `","kind":"pointer","minion_id":"` + minion + `","execution_id":"` + id + `"}`,
		"execution elsewhere": `{"request_id":"` + id + `","kind":"execution","minion_id":"` + minion + `","execution_id":"` + receipt.NewRequestID() + `"}`,
		"unknown kind":        `{"request_id":"` + id + `","kind":"other","minion_id":"` + minion + `","execution_id":"` + id + `"}`,
		"bad minion":          `{"request_id":"` + id + `","kind":"execution","minion_id":"../x","execution_id":"` + id + `"}`,
	} {
		if _, err := decodeRID(&mvccpb.KeyValue{Value: []byte(data)}, id); !errors.Is(err, catalog.ErrCorrupt) {
			t.Errorf("request index %s: %v", name, err)
		}
	}
	e := catalog.Execution{RequestID: id, MinionID: minion, Company: "acme", DefinitionID: receipt.NewRequestID(),
		Revision: 1, Source: []byte("x"), Canonical: []byte("{}"), Digest: receipt.Digest([]byte("{}")),
		Mode: catalog.ModeApply, CreatedAt: now, Outcome: catalog.Outcome{Status: receipt.StatusNotStarted}}
	ok, err := catEncode(e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeExecution(&mvccpb.KeyValue{Value: []byte(ok)}, minion, id); err != nil {
		t.Fatalf("an execution catEncode wrote: %v", err)
	}
	for name, data := range map[string]string{
		"other minion": strings.Replace(ok, minion, "client-"+receipt.NewRequestID(), 1),
		"digest":       strings.Replace(ok, e.Digest, receipt.Digest([]byte("[]")), 1),
		"status":       strings.Replace(ok, `"status":"not_started"`, `"status":"done"`, 1),
		"bad pointer":  strings.Replace(ok, `"outcome"`, `"pointers":[{"request_id":"x","reason":"reuse_running","created_at":"2026-01-01T00:00:00Z"}],"outcome"`, 1),
		"counts":       strings.Replace(ok, `"passed":0`, `"passed":3`, 1),
	} {
		if _, err := decodeExecution(&mvccpb.KeyValue{Value: []byte(data)}, minion, id); !errors.Is(err, catalog.ErrCorrupt) {
			t.Errorf("execution %s: %v", name, err)
		}
	}
	big := d
	big.Source = make([]byte, maxCatalogRecordSize)
	if _, err := catEncode(big); !errors.Is(err, catalog.ErrInvalid) {
		t.Errorf("encoding a record over the cap: %v", err)
	}
}
