package main

import (
	"errors"
	"fmt"
	"slices"

	"github.com/urfave/cli/v2"
)

// completionFlag is urfave/cli's hidden flag that lists the completions of
// the words before it; the bash and zsh scripts call it.
const completionFlag = "--generate-bash-completion"

const bashCompletion = `# bash completion for agentbox: source it, or install it as
# /usr/share/bash-completion/completions/agentbox (make install does).
_agentbox() {
  local cur words
  cur="${COMP_WORDS[COMP_CWORD]}"
  if [[ "$cur" == -* ]]; then
    words=$("${COMP_WORDS[@]:0:COMP_CWORD}" - ` + completionFlag + ` 2>/dev/null)
  else
    words=$("${COMP_WORDS[@]:0:COMP_CWORD}" ` + completionFlag + ` 2>/dev/null)
  fi
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
  [[ ${#COMPREPLY[@]} -eq 0 ]] && COMPREPLY=($(compgen -f -- "$cur"))
  return 0
}
complete -o filenames -F _agentbox agentbox
`

const zshCompletion = `#compdef agentbox
# zsh completion for agentbox: put it on $fpath as _agentbox (make install
# does), or source it after compinit.
_agentbox() {
  local -a words_
  local cur=${words[CURRENT]}
  if [[ "$cur" == -* ]]; then
    words_=("${(@f)$(${words[1,CURRENT-1]} - ` + completionFlag + ` 2>/dev/null)}")
  else
    words_=("${(@f)$(${words[1,CURRENT-1]} ` + completionFlag + ` 2>/dev/null)}")
  fi
  if [[ -n "${words_[1]}" ]]; then
    _describe 'agentbox' words_
  else
    _files
  fi
}
compdef _agentbox agentbox
`

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print the shell completion script for bash, zsh or fish",
		ArgsUsage: "bash|zsh|fish",
		Description: "bash:  source <(agentbox completion bash)\n" +
			"zsh:   agentbox completion zsh > \"${fpath[1]}/_agentbox\"\n" +
			"fish:  agentbox completion fish > ~/.config/fish/completions/agentbox.fish",
		Action: func(c *cli.Context) error {
			shells := []string{"bash", "zsh", "fish"}
			if c.NArg() != 1 || !slices.Contains(shells, c.Args().First()) {
				return usageError{errors.New("completion needs one shell: bash, zsh or fish")}
			}
			switch c.Args().First() {
			case "bash":
				_, err := fmt.Fprint(c.App.Writer, bashCompletion)
				return err
			case "zsh":
				_, err := fmt.Fprint(c.App.Writer, zshCompletion)
				return err
			}
			s, err := c.App.ToFishCompletion()
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(c.App.Writer, s)
			return err
		},
	}
}

// manCommand prints the man page, generated from the CLI definition.
func manCommand() *cli.Command {
	return &cli.Command{
		Name:  "man",
		Usage: "print the agentbox(1) man page (troff), generated from the CLI definition",
		Action: func(c *cli.Context) error {
			s, err := c.App.ToManWithSection(1)
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(c.App.Writer, s)
			return err
		},
	}
}
