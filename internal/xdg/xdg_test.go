package xdg

import "testing"

func TestStateDir(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, c := range []struct {
		env  map[string]string
		want string
		err  bool
	}{
		{map[string]string{"XDG_STATE_HOME": "/s", "HOME": "/h"}, "/s", false},
		{map[string]string{"XDG_STATE_HOME": "rel", "HOME": "/h"}, "/h/.local/state", false},
		{map[string]string{"HOME": "/h"}, "/h/.local/state", false},
		{map[string]string{}, "", true},
	} {
		got, err := StateDir(env(c.env))
		if got != c.want || (err != nil) != c.err {
			t.Errorf("%v: %q %v", c.env, got, err)
		}
	}
}
