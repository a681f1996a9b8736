package catalog

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oduflow/oduflow-go/internal/safefile"
	"github.com/oduflow/oduflow-go/internal/strictjson"
)

func TestCatalogRecordsAreStrict(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	d, err := s.CreateDefinition(ctx, "acme", "motd", []byte("a: b\n"))
	if err != nil {
		t.Fatal(err)
	}
	good, err := s.st.Read(defName(d.ID))
	if err != nil {
		t.Fatal(err)
	}
	good = bytes.TrimSpace(good)
	body := good[:len(good)-1]
	cases := []struct {
		name string
		data []byte
		kind error
	}{
		{"appended duplicate", append(append([]byte{}, body...), `,"revision":7}`...), strictjson.ErrDuplicateKey},
		{"duplicate by case", append(append([]byte{}, body...), `,"Revision":7}`...), strictjson.ErrDuplicateKey},
		{"second object", append(append([]byte{}, good...), `{"revision":7}`...), strictjson.ErrTrailingData},
		{"stray bracket", append(append([]byte{}, good...), `]`...), strictjson.ErrTrailingData},
		{"unknown field", append(append([]byte{}, body...), `,"extra":1}`...), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.st.WriteAtomic(defName(d.ID), tc.data); err != nil {
				t.Fatal(err)
			}
			_, err := s.Definition(ctx, d.ID)
			if !errors.Is(err, ErrCorrupt) || (tc.kind != nil && !errors.Is(err, tc.kind)) {
				t.Fatalf("Definition over %s: %v", tc.data, err)
			}
		})
	}
	if err := s.st.WriteAtomic(defName(d.ID), append(good, '\n')); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Definition(ctx, d.ID); err != nil || got.Revision != d.Revision {
		t.Fatalf("good record: %+v %v", got, err)
	}
}

// A FIFO or socket at a catalog record or its lock is refused at once (a blocking open would hang).
func TestCatalogNonRegularFilesRefusedAtOnce(t *testing.T) {
	ctx := context.Background()
	for _, kind := range []string{"fifo", "socket"} {
		t.Run(kind, func(t *testing.T) {
			s := openTest(t)
			d, err := s.CreateDefinition(ctx, "acme", "motd", []byte("a: b\n"))
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{defName(d.ID), defName(d.ID) + ".lock"} {
				p := filepath.Join(s.st.Dir(), name)
				_ = os.Remove(p)
				if kind == "fifo" {
					if err := unix.Mkfifo(p, 0o600); err != nil {
						t.Fatal(err)
					}
				} else {
					// Socket paths are limited to 108 bytes: bind in a short directory, then move it in place.
					short, err := os.MkdirTemp("", "sock")
					if err != nil {
						t.Fatal(err)
					}
					defer os.RemoveAll(short)
					l, err := net.Listen("unix", filepath.Join(short, "s"))
					if err != nil {
						t.Fatal(err)
					}
					defer l.Close()
					if err := os.Rename(filepath.Join(short, "s"), p); err != nil {
						t.Fatal(err)
					}
					if err := os.Chmod(p, 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
			done := make(chan [2]error, 1)
			go func() {
				_, rerr := s.Definition(ctx, d.ID)
				_, uerr := s.SaveSource(ctx, d.ID, []byte("a: c\n"))
				done <- [2]error{rerr, uerr}
			}()
			select {
			case errs := <-done:
				for i, err := range errs {
					if !errors.Is(err, safefile.ErrNotRegular) {
						t.Fatalf("op %d: %v", i, err)
					}
				}
			case <-time.After(5 * time.Second):
				t.Fatal("catalog hangs on a non-regular record")
			}
		})
	}
}
