package receipt

import (
	"bytes"
	"testing"

	"github.com/oduflow/oduflow-go/internal/strictjson"
)

// Decode was strict before the shared checker existed, with reasons whose precedence the Python module
// shares; it keeps its own walk. This table pins the hostile record cases, and checks that every record
// the shared checker refuses, Decode refuses too (a receipt holds no nested objects, so a nested duplicate
// key is already wrong_type or unknown_key).
func TestDecodeRefusesHostileRecords(t *testing.T) {
	t.Parallel()
	good, err := goodReceipt().Encode()
	if err != nil {
		t.Fatal(err)
	}
	body := good[:len(good)-1]
	add := func(b []byte, s string) []byte { return append(append([]byte{}, b...), s...) }
	cases := []struct {
		name, reason string
		data         []byte
	}{
		{"appended status", reasonDuplicateKey, add(body, `,"status":"failed"}`)},
		{"duplicate by escape", reasonDuplicateKey, add(body, `,"st\u0061tus":"failed"}`)},
		{"second object", reasonBadJSON, add(good, `{"status":"failed"}`)},
		{"stray bracket", reasonBadJSON, add(good, `]`)},
		{"trailing garbage", reasonBadJSON, add(good, ` x`)},
		{"nested duplicate", reasonWrongType, bytes.Replace(good, []byte(`"status":"succeeded"`), []byte(`"status":{"a":1,"a":2}`), 1)},
		{"nested duplicate under unknown key", reasonUnknownKey, add(body, `,"x":{"a":1,"a":2}}`)},
		{"case variant key", reasonUnknownKey, add(body, `,"Status":"failed"}`)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if strictjson.Check(c.data) == nil && c.reason != reasonUnknownKey {
				t.Fatalf("strictjson accepts %s", c.data)
			}
			_, err := Decode(c.data)
			wantReason(t, err, c.reason)
		})
	}
	if _, err := Decode(add(good, "\n")); err != nil {
		t.Fatalf("trailing newline: %v", err)
	}
}
