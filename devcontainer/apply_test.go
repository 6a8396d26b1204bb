package devcontainer

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/sandbox"
)

// Apply sets the image, the environment, the user and returns the
// lifecycle scripts; nothing of the devcontainer overrides what agentbox
// or the policy set.
func TestApply(t *testing.T) {
	c := &Config{Path: "/ws/.devcontainer/devcontainer.json", Image: "agentbox/python:latest",
		Env: map[string]string{"GREETING": "hi"}, User: "1000:1000",
		Commands: []Command{{Field: "postCreateCommand", Script: "make setup"}, {Field: "postStartCommand", Script: "true"}}}
	policyEnv := map[string]string{"TERM": "xterm"}
	cfg := sandbox.Config{Image: "agentbox/base:latest", Env: policyEnv}
	cmds, err := Apply(c, "agentbox/python:latest", "", &cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cmds, []string{"make setup", "true"}) || cfg.Image != "agentbox/python:latest" || cfg.User != "1000:1000" ||
		cfg.Env["GREETING"] != "hi" || cfg.Env["TERM"] != "xterm" {
		t.Errorf("applied: %q %+v", cmds, cfg)
	}
	if _, ok := policyEnv["GREETING"]; ok {
		t.Error("Apply wrote into the policy's environment map")
	}

	for _, tc := range []struct {
		name       string
		env        map[string]string
		user, pol  string
		policyEnv  map[string]string
		wantInText string
	}{
		{name: "proxy variable", env: map[string]string{"HTTPS_PROXY": "http://evil:3128"}, wantInText: "containerEnv.HTTPS_PROXY: agentbox sets it"},
		{name: "trust variable", env: map[string]string{"SSL_CERT_FILE": "/workspace/ca.pem"}, wantInText: "containerEnv.SSL_CERT_FILE: agentbox sets it"},
		{name: "policy variable", env: map[string]string{"TOKEN": "x"}, policyEnv: map[string]string{"TOKEN": "y"}, wantInText: "containerEnv.TOKEN: the policy's sandbox.env passes it too"},
		{name: "user", user: "1000:1000", pol: "2000:2000", wantInText: "remoteUser/containerUser 1000:1000: the policy sets sandbox.user 2000:2000"},
	} {
		c := &Config{Path: "dc.json", Image: "img", Env: tc.env, User: tc.user}
		cfg := sandbox.Config{Image: "agentbox/base:latest", Env: tc.policyEnv}
		_, err := Apply(c, "img", tc.pol, &cfg)
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tc.wantInText) {
			t.Errorf("%s: %v; want refused with %q", tc.name, err, tc.wantInText)
		}
		if cfg.Image != "agentbox/base:latest" {
			t.Errorf("%s: refused, yet the image became %q", tc.name, cfg.Image)
		}
	}
	if _, err := Apply(&Config{Path: "dc.json"}, "", "", &sandbox.Config{}); err == nil {
		t.Error("no image: no error")
	}
}
