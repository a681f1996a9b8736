package saltcmd_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/saltcmd"
)

// jsonData decodes a JSON object the way the event bus decoder types values: integers int64,
// other numbers float64.
func jsonData(b []byte) (map[string]any, bool) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if d.Decode(&m) != nil {
		return nil, false
	}
	return numbers(m).(map[string]any), true
}

func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	}
	return v
}

// FuzzParseReturn: any tag and data either fail with ErrMalformedReturn or give a Returned
// result that names the tag's minion and JID, with Success only when the data says so. Seeds
// (testdata/fuzz/FuzzParseReturn) are real Salt 3006.0 returns: test.ping, find_job running
// and finished, state.apply, and forged or broken variants.
func FuzzParseReturn(f *testing.F) {
	f.Add("salt/job/20261129154606042846/ret/web1",
		[]byte(`{"cmd":"_return","id":"web1","success":true,"return":true,"retcode":0,"jid":"20261129154606042846","fun":"test.ping","fun_args":[]}`))
	f.Fuzz(func(t *testing.T, tag string, raw []byte) {
		data, ok := jsonData(raw)
		if !ok {
			return
		}
		r, err := saltcmd.ParseReturn(tag, data)
		if err != nil {
			if !errors.Is(err, saltcmd.ErrMalformedReturn) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if r.State != saltcmd.Returned || r.Minion == "" || !strings.HasSuffix(tag, "/ret/"+r.Minion) {
			t.Fatalf("result %+v for tag %q", r, tag)
		}
		if _, err := salt.ParseJID(string(r.JID)); err != nil || !strings.Contains(tag, string(r.JID)) {
			t.Fatalf("jid %q", r.JID)
		}
		if r.Success != (data["success"] == true) {
			t.Fatalf("success %v from %v", r.Success, data["success"])
		}
		if rc, isInt := data["retcode"].(int64); isInt && rc >= 0 && rc < 1<<31 && r.Retcode != int(rc) {
			t.Fatalf("retcode %d from %v", r.Retcode, rc)
		}
		var anyv any
		_ = r.Decode(&anyv)
		_, _ = r.States()
		_, _ = r.Bool()
		_, _ = r.Text()
		saltcmd.ClassifyFindJobForTest(r, r.JID)
	})
}
