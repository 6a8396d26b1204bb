package executor

import (
	"path"
	"regexp"
	"strings"

	"github.com/agentbox/agentbox/sandbox"
)

// Toolchains: the files of an image that belong together, so that what a
// toolchain runs of itself is judged as part of the command the agent ran
// (`go test` runs GOROOT/pkg/tool/*/compile, vet, link; gcc runs cc1, as,
// collect2, ld) and not as unknown commands of their own. The manifest
// records the grouping (sandbox.ManifestProgram.Toolchain, Driver); the
// tracer follows it from a driver to the members it executes (see
// toolchainctx.go). A member run by anything else (a script, the agent's
// command itself) is judged by its own names as before.

// Toolchain names.
const (
	toolchainGo  = "go"
	toolchainGCC = "gcc"
)

// gccDriver matches the names of GCC's compiler drivers (gcc, cc, c++,
// g++, cpp, gcc-12, x86_64-linux-gnu-gcc-12, ...).
var gccDriver = regexp.MustCompile(`^([a-z0-9_]+-[a-z0-9_]+-[a-z0-9_]+-)?(gcc|g\+\+|c\+\+|cc|cpp)(-[0-9.]+)?$`)

// binutilsMember matches the assembler and linker a compiler driver runs
// (as, ld, ld.bfd, ld.gold, x86_64-linux-gnu-as, ...).
var binutilsMember = regexp.MustCompile(`^([a-z0-9_]+-[a-z0-9_]+-[a-z0-9_]+-)?(as|ld|ld\.bfd|ld\.gold|ld\.lld)$`)

// groupToolchains sets Toolchain and Driver on the manifest's programs,
// from their paths alone:
//
//   - go: R/bin/go and R/bin/gofmt are drivers and every executable under
//     R/pkg/tool/ a member, for each R that has both (Debian's
//     /usr/lib/go-1.19, /usr/local/go);
//   - gcc: the compiler drivers by name, and as members the programs under
//     /usr/lib/gcc/ and /usr/libexec/gcc/ (cc1, collect2, lto-wrapper)
//     and the assembler and linker.
func groupToolchains(m *sandbox.Manifest) {
	goRoots := map[string]bool{}
	for _, e := range m.Programs {
		if len(e.Paths) > 0 && path.Base(e.Paths[0]) == "go" && path.Base(path.Dir(e.Paths[0])) == "bin" {
			goRoots[path.Dir(path.Dir(e.Paths[0]))] = true
		}
	}
	for i := range m.Programs {
		e := &m.Programs[i]
		if len(e.Paths) == 0 {
			continue
		}
		e.Toolchain, e.Driver = toolchainOf(e.Paths, goRoots)
	}
}

// toolchainOf says which toolchain a file (its path, then its links)
// belongs to and whether it is that toolchain's driver.
func toolchainOf(paths []string, goRoots map[string]bool) (toolchain string, driver bool) {
	file := paths[0]
	for root := range goRoots {
		switch {
		case file == root+"/bin/go" || file == root+"/bin/gofmt":
			return toolchainGo, true
		case strings.HasPrefix(file, root+"/pkg/tool/"):
			return toolchainGo, false
		}
	}
	if strings.HasPrefix(file, "/usr/lib/gcc/") || strings.HasPrefix(file, "/usr/libexec/gcc/") {
		return toolchainGCC, false
	}
	for _, p := range paths {
		n := path.Base(p)
		if gccDriver.MatchString(n) {
			return toolchainGCC, true
		}
	}
	for _, p := range paths {
		if binutilsMember.MatchString(path.Base(p)) {
			return toolchainGCC, false
		}
	}
	return "", false
}

// goBuilt matches where the go command puts the binaries it builds and
// runs (go test's pkg.test, go run's program): $GOTMPDIR/go-buildNNN/bNNN/.
var goBuilt = regexp.MustCompile(`/go-build[0-9]+/b[0-9]+/`)

// builtBy says whether a file not in the image, executed by a toolchain's
// driver, is that toolchain's own product: go's test binaries and go run's
// programs in its work directory.
func builtBy(toolchain string, exe string) bool {
	return toolchain == toolchainGo && goBuilt.MatchString(exe)
}
