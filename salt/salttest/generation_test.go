package salttest

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestGenerationPublishEvent: Generation3007 fires salt/job/<jid>/publish
// (the publish load's copy, in the key order seen live) between /new and the
// return; Generation3006 does not.
func TestGenerationPublishEvent(t *testing.T) {
	for _, g := range []Generation{Generation3006, Generation3007} {
		t.Run(g.String(), func(t *testing.T) {
			s := startLab(t, WithGeneration(g))
			evs := dialEvents(t, s.EventsAddr())
			waitReaders(t, s, 1)
			const jid = "20261202001740189067"
			call(t, s, pingLoad(jid)...)
			var tags []string
			for {
				ev, err := evs.next(5 * time.Second)
				if err != nil {
					t.Fatal(err)
				}
				tags = append(tags, ev.tag)
				if strings.HasSuffix(ev.tag, "/publish") {
					if got, want := ev.data.Keys, []any{"fun", "arg", "tgt", "jid", "ret", "tgt_type", "user", "_stamp"}; !reflect.DeepEqual(got, want) {
						t.Fatalf("publish keys %v want %v", got, want)
					}
					if mget(t, ev.data, "fun") != "test.ping" || mget(t, ev.data, "jid") != jid {
						t.Fatalf("publish %s", shape(ev.data, ""))
					}
				}
				if strings.Contains(ev.tag, "/ret/") {
					break
				}
			}
			want := []string{jid, "salt/job/" + jid + "/new", "salt/job/" + jid + "/ret/" + labMinion}
			if g == Generation3007 {
				want = []string{jid, "salt/job/" + jid + "/new", "salt/job/" + jid + "/publish", "salt/job/" + jid + "/ret/" + labMinion}
			}
			if !reflect.DeepEqual(tags, want) {
				t.Fatalf("tags %v want %v", tags, want)
			}
		})
	}
}

// TestGenerationBusBlocksOnStalledReader: on Generation3007 a reader that
// stops reading blocks every other reader and stays connected; on
// Generation3006 it is disconnected and the others go on.
func TestGenerationBusBlocksOnStalledReader(t *testing.T) {
	for _, g := range []Generation{Generation3006, Generation3007} {
		t.Run(g.String(), func(t *testing.T) {
			s := startLab(t, WithGeneration(g))
			stalled := dialEvents(t, s.EventsAddr()) // never read
			reader := dialEvents(t, s.EventsAddr())
			waitReaders(t, s, 2)
			blob := map[string]any{"blob": strings.Repeat("x", 64<<10)}
			got := make(chan int, 1)
			go func() {
				n := 0
				for {
					ev, err := reader.next(3 * time.Second)
					if err != nil {
						got <- n
						return
					}
					if ev.tag == "flood" {
						n++
					}
				}
			}()
			const fired = 60
			for i := 0; i < fired; i++ {
				if err := s.FireEvent("flood", blob); err != nil {
					t.Fatal(err)
				}
			}
			n := <-got
			switch g {
			case Generation3006:
				if n != fired {
					t.Fatalf("3006: reader got %d of %d: a stalled reader must not block the others", n, fired)
				}
			default:
				if n >= fired || s.EventReaders() != 2 {
					t.Fatalf("3007: reader got %d of %d, %d readers: the stalled reader must block the bus", n, fired, s.EventReaders())
				}
				// the stalled reader (and the reader, which stopped reading) go away: the bus delivers again
				_ = stalled.c.Close()
				_ = reader.c.Close()
				waitSim(t, s, "the closed readers still counted", func() bool { return s.EventReaders() == 0 })
				after := dialEvents(t, s.EventsAddr())
				waitReaders(t, s, 1)
				if err := s.FireEvent("after", nil); err != nil {
					t.Fatal(err)
				}
				after.waitTag(t, "after")
			}
		})
	}
}

// TestGenerationSocketModeAndAuthVersion: the event socket is 0660 on
// Generation3006 with eauth users (0600 without), 0660 on Generation3007+
// whatever the configuration (as 3007.8 and the 3008 line make it); Generation3008 refuses envelopes below version 3 unless
// WithMinimumAuthVersion says otherwise.
func TestGenerationSocketModeAndAuthVersion(t *testing.T) {
	for _, c := range []struct {
		g     Generation
		mode  os.FileMode
		eauth bool
	}{{Generation3006, 0o660, true}, {Generation3006, 0o600, false}, {Generation3007, 0o660, false},
		{Generation3007, 0o660, true}, {Generation3008, 0o660, false}} {
		var s *Master
		if c.eauth {
			s = startLab(t, WithGeneration(c.g))
		} else {
			s = startSim(t, WithDir(shortDir(t)), WithGeneration(c.g))
		}
		st, err := os.Stat(strings.TrimPrefix(s.EventsAddr(), "unix://"))
		if err != nil || st.Mode().Perm() != c.mode {
			t.Fatalf("%v: socket %v %v want %o", c.g, st, err, c.mode)
		}
	}
	ping := func(s *Master, version int) any {
		r, err := zreq(t, s.Addr(), envelope(t, version, "cmd", "ping"), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		v, err := unpack(r.body)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	s8 := startLab(t, WithGeneration(Generation3008))
	if got := ping(s8, 2); got != replyBadLoad {
		t.Fatalf("3008 version 2: %v", got)
	}
	if got := ping(s8, 3); got == replyBadLoad {
		t.Fatalf("3008 version 3 refused")
	}
	s8open := startLab(t, WithGeneration(Generation3008), WithMinimumAuthVersion(0))
	if got := ping(s8open, 2); got == replyBadLoad {
		t.Fatalf("override: version 2 refused")
	}
	s7 := startLab(t, WithGeneration(Generation3007))
	if got := ping(s7, 2); got == replyBadLoad {
		t.Fatalf("3007 version 2 refused")
	}
}

// TestFireClusterEvent: the peer's event goes out under the wrapped tag with __peer_id.
func TestFireClusterEvent(t *testing.T) {
	s := startLab(t, WithGeneration(Generation3007))
	evs := dialEvents(t, s.EventsAddr())
	waitReaders(t, s, 1)
	if err := s.FireClusterEvent("master-b", "salt/job/20261202001740189067/ret/m1", map[string]any{"retcode": 0}); err != nil {
		t.Fatal(err)
	}
	ev := evs.waitTag(t, "cluster/event/master-b/salt/job/20261202001740189067/ret/m1")
	if mget(t, ev.data, "__peer_id") != "master-b" {
		t.Fatalf("%s", shape(ev.data, ""))
	}
}
