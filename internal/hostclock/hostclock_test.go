package hostclock

import (
	"testing"
	"time"
)

func TestStampRoundTrip(t *testing.T) {
	var c Clock
	now, err := c.Now()
	if err != nil {
		t.Fatal(err)
	}
	got, ok := Parse(now.String())
	if !ok || got != now {
		t.Fatalf("Parse(%q) = %+v, %v", now.String(), got, ok)
	}
	for _, bad := range []string{"", "x/1", now.Boot, now.Boot + "/", now.Boot + "/-1", now.Boot + "/1x",
		"ABCDEFAB-0000-0000-0000-000000000000/1"} {
		if _, ok := Parse(bad); ok {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

func TestWindowOpen(t *testing.T) {
	var c Clock
	start, err := c.Now()
	if err != nil {
		t.Fatal(err)
	}
	c.Shift(29 * time.Second)
	now, err := c.Now()
	if err != nil {
		t.Fatal(err)
	}
	if !WindowOpen(start.String(), now, 30*time.Second) {
		t.Fatal("a 30 s window closed 29 s after it opened")
	}
	c.SetShift(31 * time.Second)
	if now, err = c.Now(); err != nil {
		t.Fatal(err)
	}
	if WindowOpen(start.String(), now, 30*time.Second) {
		t.Fatal("a 30 s window still open 31 s after it opened")
	}
	other := Stamp{Boot: "00000000-0000-0000-0000-000000000000", NS: now.NS}
	if WindowOpen(other.String(), now, time.Hour) || WindowOpen("", now, time.Hour) {
		t.Fatal("a stamp of another boot, or none, opened a window")
	}
}
