package policy

import (
	"fmt"
	"sort"
	"strings"
)

// netPresets are the named host sets a network entry may use (`@pypi`):
// the hosts those clients reach by default, on the ports they use.
var netPresets = map[string][]string{
	"pypi":   {"pypi.org:443", "files.pythonhosted.org:443"},
	"npm":    {"registry.npmjs.org:443", "registry.yarnpkg.com:443"},
	"go":     {"proxy.golang.org:443", "sum.golang.org:443", "index.golang.org:443"},
	"debian": {"deb.debian.org:80", "deb.debian.org:443", "security.debian.org:80", "security.debian.org:443"},
	"github": {"github.com:443", "api.github.com:443", "codeload.github.com:443", "uploads.github.com:443",
		"raw.githubusercontent.com:443", "objects.githubusercontent.com:443"},
}

// NetPreset returns the entries a preset name (without "@") expands to.
func NetPreset(name string) ([]string, bool) {
	hosts, ok := netPresets[name]
	return append([]string(nil), hosts...), ok
}

func presetNames() string {
	names := make([]string, 0, len(netPresets))
	for n := range netPresets {
		names = append(names, "@"+n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// parseNetEntry parses one entry of a network list: a preset (@pypi)
// expands to its hosts, each with id "<id> (@pypi)".
func parseNetEntry(id, s string) ([]NetRule, error) {
	if name, ok := strings.CutPrefix(s, "@"); ok {
		hosts, ok := netPresets[name]
		if !ok {
			return nil, fmt.Errorf("unknown preset %q; known presets: %s", s, presetNames())
		}
		out := make([]NetRule, 0, len(hosts))
		for _, h := range hosts {
			r, err := ParseNetRule(h)
			if err != nil {
				return nil, fmt.Errorf("preset %s: %v", s, err) // never: the table is tested
			}
			r.ID, r.Pattern = id, s+" "+h
			out = append(out, r)
		}
		return out, nil
	}
	r, err := ParseNetRule(s)
	if err != nil {
		return nil, err
	}
	r.ID = id
	return []NetRule{r}, nil
}
