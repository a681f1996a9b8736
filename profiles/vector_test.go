package profiles

import (
	"encoding/json"
	"testing"
)

// TestShapeMatchesCapturedStateHigh compiles the YAML equivalent of the high
// data that state.high accepted on the lab's Salt 3006.0 minion
// (testdata/vectors/state_high_arg.json) and checks the shape: same ids,
// same keys per id, the function first, the same arguments, plus the implicit
// order that an sls would carry. Only __sls__ differs by design.
func TestShapeMatchesCapturedStateHigh(t *testing.T) {
	var vec struct {
		High map[string]map[string]any `json:"high"`
	}
	if err := json.Unmarshal(mustRead(t, "testdata/vectors/state_high_arg.json"), &vec); err != nil {
		t.Fatal(err)
	}
	c, err := CompileCustom([]byte("lab_high_ok:\n  test.succeed_without_changes:\n    - name: high data ok\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := vec.High["lab_high_ok"]
	got, ok := c.HighData["lab_high_ok"].(map[string]any)
	if !ok || len(c.HighData) != len(vec.High) || len(got) != len(want) {
		t.Fatalf("got %#v, vector %#v", c.HighData, vec.High)
	}
	if got["__env__"] != want["__env__"] || got["__sls__"] != customSLS {
		t.Fatalf("__env__/__sls__: %v %v", got["__env__"], got["__sls__"])
	}
	wl, gl := want["test"].([]any), got["test"].([]any)
	if gl[0] != wl[0] || gl[1].(map[string]any)["name"] != wl[1].(map[string]any)["name"] {
		t.Fatalf("declaration %#v, vector %#v", gl, wl)
	}
	if len(gl) != 3 || gl[2].(map[string]any)["order"] != int64(firstAutoOrder) {
		t.Fatalf("declaration %#v lacks the implicit order", gl)
	}
}
