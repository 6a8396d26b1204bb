package policy

import "strings"

// protectedNames are variables whose value makes the shell or a common
// program run code of the variable's choosing, or read its configuration
// (and so its commands) from a place of the variable's choosing. Assigning
// one is always denied: the static analysis of the rest of the script, and
// of any program it starts, would be meaningless.
var protectedNames = map[string]bool{
	// the shell itself
	"PATH": true, "BASH_ENV": true, "ENV": true, "IFS": true, "PROMPT_COMMAND": true,
	"SHELLOPTS": true, "BASHOPTS": true, "PS4": true, "CDPATH": true, "SHELL": true,
	"ZDOTDIR": true, "FPATH": true, "INPUTRC": true, "BASH_LOADABLES_PATH": true,
	"BASH_CMDS": true, "BASH_ALIASES": true, // the command hash table and the aliases
	// configuration read from the home or config directory (.gitconfig,
	// .npmrc, .bashrc, ...), editors and viewers started by other programs
	"HOME": true, "VISUAL": true, "BROWSER": true, "LESSOPEN": true, "LESSCLOSE": true,
	"EXINIT": true, "VIMINIT": true, "MYVIMRC": true,
	// the C library: character-set converters and tunables load code
	"GCONV_PATH": true, "GLIBC_TUNABLES": true, "OPENSSL_CONF": true, "OPENSSL_ENGINES": true,
	// interpreters' module paths and startup options
	"PYTHONPATH": true, "PYTHONSTARTUP": true, "PYTHONHOME": true, "PYTHONUSERBASE": true,
	"PYTHONINSPECT": true, "PYTHONBREAKPOINT": true,
	"PERL5LIB": true, "PERLLIB": true, "PERL5OPT": true, "PERL5DB": true,
	"RUBYOPT": true, "RUBYLIB": true, "NODE_OPTIONS": true, "NODE_PATH": true,
	"LUA_INIT": true, "LUA_PATH": true, "LUA_CPATH": true, "TCLLIBPATH": true,
	"PHPRC": true, "PHP_INI_SCAN_DIR": true,
	"JAVA_TOOL_OPTIONS": true, "_JAVA_OPTIONS": true, "JDK_JAVA_OPTIONS": true,
	// build tools that read extra code from a variable
	"MAKEFILES": true, "CONFIG_SITE": true,
	// programs run to ask for a password
	"SSH_ASKPASS": true, "SUDO_ASKPASS": true,
}

// protectedPrefixes and protectedSuffixes extend protectedNames to families
// of variables: the dynamic loader (LD_*, DYLD_*), git (GIT_*: GIT_SSH,
// GIT_EXTERNAL_DIFF, GIT_CONFIG_*, ...), exported bash functions
// (BASH_FUNC_*), XDG configuration and data directories, npm's
// configuration (npm_config_script_shell, ...), and pagers and editors.
var (
	protectedPrefixes = []string{"LD_", "DYLD_", "GIT_", "BASH_FUNC_", "XDG_CONFIG_", "XDG_DATA_",
		"npm_config_", "NPM_CONFIG_"}
	protectedSuffixes = []string{"PAGER", "EDITOR"}
)

// protectedVar reports whether assigning to the variable can change which
// program runs or what the shell executes, so that static analysis of the
// rest of the script would be meaningless.
func protectedVar(name string) bool {
	if protectedNames[name] {
		return true
	}
	for _, p := range protectedPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	for _, s := range protectedSuffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}
