package policy

import (
	"path/filepath"
	"testing"
)

func TestLayerCases(t *testing.T) {
	n := runCaseFile(t, filepath.Join("testdata", "layers.yaml"))
	t.Logf("%d first-layer cases", n)
}
