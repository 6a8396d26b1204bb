package policy

import "path"

// DuringProgram reports whether a connection may carry secret s given
// the program chain of the process that opened it (its argv, then each
// traced ancestor's, nearest first; argv[0] is the file executed when the
// program named another): always when s has no during rules, else when
// one argv of the chain matches one of them. Words are taken literally,
// as at exec time: a shell or wrapper in the chain is not looked into
// (the programs it starts are entries of their own), so `bash -c "git
// push; python3 x.py"` matches only for git's own tree. It returns the
// argv that matched.
func (s *Secret) DuringProgram(chain [][]string) ([]string, bool) {
	if len(s.During) == 0 {
		return nil, true
	}
	for _, argv := range chain {
		if len(argv) == 0 {
			continue
		}
		cl := &cmdline{words: make([]word, len(argv))}
		for i, w := range argv {
			cl.words[i] = word{text: w}
		}
		forms := []*cmdline{cl}
		if path.Base(argv[0]) == "git" { // git -C DIR -c k=v push: git push
			if i := gitSub(cl.words[1:]); i > 0 {
				forms = append(forms, &cmdline{words: append([]word{cl.words[0]}, cl.words[1+i:]...)})
			}
		}
		for _, f := range forms {
			for _, r := range s.During {
				if r.matches(f, false) {
					return argv, true
				}
			}
		}
	}
	return nil, false
}
