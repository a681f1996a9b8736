package service

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"

	"github.com/oduflow/oduflow-go/examples/internal/oduflowenv"
)

// A body whose keys could be read two ways is refused: a key twice (encoding/json keeps the last of two
// "request_id"), or a key that is not one of the object's exact names (encoding/json matches "Company"
// to "company"), so that the service reads every body exactly as a proxy or a log does. The messages
// never echo the key.
var (
	errDuplicateKey = errors.New("duplicate key")
	errUnknownKey   = errors.New("unknown field (keys are exact, case included)")
)

// decodeBody reads one strict JSON object of at most max bytes into v (a pointer to a struct of plain
// fields with json tags): every key exactly one of v's names (case included) and at most once, no other
// value after it. An empty body is the zero value when empty is allowed.
func decodeBody(w http.ResponseWriter, r *http.Request, op string, max int64, empty bool, v any) error {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return fmt.Errorf("%s: body over %d bytes: %w", op, max, err)
		}
		return usageError(fmt.Sprintf("%s: cannot read the body", op))
	}
	if len(bytes.TrimSpace(b)) == 0 && empty {
		return nil
	}
	if err := strictJSON(b, v); err != nil {
		return usageError(fmt.Sprintf("%s: malformed JSON body: %s", op, oduflowenv.OneLine(truncate(err.Error(), 200))))
	}
	return nil
}

// strictJSON decodes b, one JSON object whose keys are exactly v's field names, each at most once.
func strictJSON(b []byte, v any) error {
	names := jsonNames(v)
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errors.New("not a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if !names[key] {
			return errUnknownKey
		}
		if seen[key] {
			return errDuplicateKey
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("more than one value")
	}
	strict := json.NewDecoder(bytes.NewReader(b))
	strict.DisallowUnknownFields()
	return strict.Decode(v)
}

// jsonNames is the set of v's JSON field names (v a pointer to a struct).
func jsonNames(v any) map[string]bool {
	out := map[string]bool{}
	t := reflect.TypeOf(v).Elem()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out[name] = true
		}
	}
	return out
}
