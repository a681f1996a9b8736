package fakeminion

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/cockroachdb/errors"
)

// closeGrace is how long Close waits for running jobs before killing the host.
const closeGrace = 5 * time.Second

func afterGrace() <-chan time.Time { return time.After(closeGrace) }

// wire is the host.py --config shape.
func (c PythonConfig) wire() map[string]any {
	out := map[string]any{}
	if c.SaltVersion != "" {
		out["salt_version"] = c.SaltVersion
	}
	if len(c.Results) > 0 {
		out["results"] = c.Results
	}
	if len(c.Delays) > 0 {
		d := map[string]float64{}
		for k, v := range c.Delays {
			d[k] = v.Seconds()
		}
		out["delay"] = d
	}
	if len(c.Raise) > 0 {
		out["raise"] = c.Raise
	}
	if c.MultiprocessingOff {
		out["multiprocessing"] = false
	}
	if c.Pillar != nil {
		out["pillar"] = c.Pillar
	}
	if len(c.MinionOpts) > 0 {
		out["opts"] = c.MinionOpts
	}
	return out
}

// decodeReturn decodes a JSON return value: objects as map[string]any, integers as int64
// (what a msgpack decoder would produce), other numbers as float64.
func decodeReturn(raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, errors.Wrap(err, "fakeminion: decode return")
	}
	return normalize(v), nil
}

func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
		return x
	}
	return v
}
