package policy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The attacks of issue 10's first layer, run for real with the local bash:
// ungated, each removes the victim file (so the case is a real attack in
// this bash); gated by Decide under a policy that denies rm and allows
// the carriers, the victim survives.
func TestEffectFirstLayerAttacks(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash on this machine")
	}
	p, err := Load(filepath.Join("testdata", "layers-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	attacks := []string{
		`a['$(rm -f victim)']=1`,
		`a["$(rm -f victim)"]=1`,
		"a['`rm -f victim`']=1",
		`a=( ['$(rm -f victim)']=1 )`,
		`echo ${a['$(rm -f victim)']}`,
		`k='b[$(rm -f victim)]'; echo ${a["k"]}`,
		`read 'a[$(rm -f victim)]' <<< x`,
		`declare -i x; x='a[$(rm -f victim)]'`,
		`declare -i x; x+='a[$(rm -f victim)]'`,
		`declare -i x='a[$(rm -f victim)]'`,
		`declare -i x; read x <<< 'a[$(rm -f victim)]'`,
		`[ -v 'a[$(rm -f victim)]' ]`,
		`test -v 'a[$(rm -f victim)]'`,
		`[[ -v 'a[$(rm -f victim)]' ]]`,
		`printf -v 'a[$(rm -f victim)]' x`,
		`a=(1); unset 'a[$(rm -f victim)]'`,
		`declare 'a[$(rm -f victim)]'=1`,
		`mapfile -C 'rm -f victim' -c 1 arr <<< x`,
		`bash /dev/stdin <<< 'rm -f victim'`,
		`sh /proc/self/fd/0 <<< 'rm -f victim'`,
		`set -k; bash -c 'true' BASH_ENV=./evil.sh`,
		`bash -k -c 'bash -c true BASH_ENV=./evil.sh'`,
		`set -o keyword; bash -c true BASH_ENV=./evil.sh`,
		`bash evil.sh`,
		`find . -name victim -delete`,
		`tar -xf none.tar --to-command='rm -f victim' 2>/dev/null; tar -cf a.tar evil.sh && tar -xf a.tar --to-command='rm -f victim'`,
		`env -C . find . -name victim -delete`,
	}
	for _, script := range attacks {
		for _, gated := range []bool{false, true} {
			dir := t.TempDir()
			for name, body := range map[string]string{"victim": "x", "evil.sh": "rm -f victim\n"} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if gated {
				if d := p.Decide(Action{Kind: Command, Command: script}); d.Verdict != Allow {
					continue // refused: nothing runs
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			cmd := exec.CommandContext(ctx, bash, "-c", script)
			cmd.Dir = dir
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
			_ = cmd.Run()
			cancel()
			_, err := os.Stat(filepath.Join(dir, "victim"))
			switch {
			case gated && err != nil:
				t.Errorf("%s: allowed by the policy and removed the victim", script)
			case !gated && err == nil:
				t.Errorf("%s: ungated, the victim survived; this is not an attack in this bash", script)
			}
		}
	}
}
