package workspace

import (
	"strings"
	"unicode"
)

// foldName is the name a case-insensitive, normalising filesystem (macOS
// HFS+/APFS, Windows NTFS, FAT, ext4 casefold) may open for name, as a
// key to compare names by: the code points HFS+ ignores dropped (git's
// is_hfs_dotgit list), an NTFS stream suffix (":...") and trailing dots
// and spaces cut, and every rune replaced by the smallest of its Unicode
// simple case folding orbit (what strings.EqualFold compares), so
// ".GIT", ".git\u200c", ".Envrc " and ".git::$INDEX_ALLOCATION" fold as
// ".git" and ".envrc" do.
func foldName(name string) string {
	if i := strings.IndexByte(name, ':'); i > 0 {
		name = name[:i]
	}
	var b strings.Builder
	b.Grow(len(name))
	for _, r := range name {
		if hfsIgnored(r) {
			continue
		}
		b.WriteRune(foldRune(r))
	}
	return strings.TrimRight(b.String(), ". ")
}

// foldRune names r's simple case folding orbit: the lower case of its
// smallest member (so 'K', 'k' and the Kelvin sign all give 'k').
func foldRune(r rune) rune {
	if r < 0x80 && r != 'k' && r != 'K' && r != 's' && r != 'S' {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		m = min(m, f)
	}
	return unicode.ToLower(m)
}

// hfsIgnored reports the code points HFS+ drops from names (git's
// next_hfs_char in utf8.c): zero-width joiners and marks, directional
// embeddings and overrides, deprecated format characters and the BOM.
func hfsIgnored(r rune) bool {
	switch {
	case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
		return true
	}
	return false
}

// foldPath folds every element of a slash-separated path.
func foldPath(rel string) []string {
	segs := strings.Split(rel, "/")
	for i, s := range segs {
		segs[i] = foldName(s)
	}
	return segs
}

// isDotGit reports a name that opens as .git on some filesystem: .git
// folded, or NTFS's short name git~1.
func isDotGit(name string) bool {
	f := foldName(name)
	return f == ".git" || f == "git~1"
}
