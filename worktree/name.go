package worktree

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxSlug bounds the readable part of a name, so that a very long
// conversation id still gives a short path and branch.
const maxSlug = 40

// Name is the file and branch name of a conversation's worktree: a
// readable slug of the conversation key (lower-case ASCII letters, digits
// and single dashes, at most 40 of them) and 12 hex digits of the key's
// SHA-256, so that keys the slug folds together ("C1" and "c1", or two ids
// that differ only in characters it drops) still get names of their own.
// Whatever the key holds (../, NUL, slashes, Unicode, characters a git ref
// may not contain), the name is safe as one path element and as the last
// part of a ref, and it is the same in every run: this is how a
// conversation finds its worktree again after a restart.
func Name(conversation string) string {
	return slug(conversation) + "-" + shortHash(conversation)
}

// slug keeps s's ASCII letters and digits, lower-cased, with one dash for
// each run of anything else, at most maxSlug bytes; "c" when nothing is left.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if b.Len() >= maxSlug {
			break
		}
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			dash = true
			continue
		}
		if dash && b.Len() > 0 {
			b.WriteByte('-')
		}
		dash = false
		b.WriteRune(r)
	}
	out := strings.TrimRight(b.String()[:min(b.Len(), maxSlug)], "-")
	if out == "" {
		return "c"
	}
	return out
}

// shortHash is 12 hex digits of s's SHA-256.
func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:6])
}

// Branch is the branch of a conversation's worktree: golem/<Name>.
func Branch(conversation string) string { return "golem/" + Name(conversation) }
