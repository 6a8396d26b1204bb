package main

import (
	"testing"
	"time"
)

func TestParseWhen(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		in   string
		want time.Time
	}{
		{"2d", now.Add(-48 * time.Hour)},
		{"1w", now.Add(-7 * 24 * time.Hour)},
		{"90m", now.Add(-90 * time.Minute)},
		{"2026-11-29", time.Date(2026, 11, 29, 0, 0, 0, 0, time.Local)},
		{"2026-11-29 18:00", time.Date(2026, 11, 29, 18, 0, 0, 0, time.Local)},
		{"2026-11-29T18:00:00Z", time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC)},
	} {
		got, err := parseWhen(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if d := got.Sub(c.want); d < -time.Minute || d > time.Minute {
			t.Errorf("%q = %v, want about %v", c.in, got, c.want)
		}
	}
	for _, bad := range []string{"yesterday", "2x", "-3d", "2026-13-01"} {
		if _, err := parseWhen(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

func TestCheckDecision(t *testing.T) {
	for _, ok := range []string{"", "allow", "deny", "ask", "DENY"} {
		if err := checkDecision(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	if err := checkDecision("denied"); err == nil {
		t.Error(`"denied" accepted; want an error listing allow, ask, deny`)
	}
}
