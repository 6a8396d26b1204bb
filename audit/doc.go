// Package audit writes and reads agentbox's tamper-evident audit log.
//
// # Format
//
// The log is JSON Lines: one Record per line, keys in Record's field order,
// optional fields omitted when empty, times as "2026-11-29T18:00:00.123456Z"
// (UTC, microseconds), no HTML escaping, invalid UTF-8 replaced by U+FFFD.
// Newlines and quotes in any value are escaped, so output never breaks a
// line or forges one. A tool call is two records: the "decision" phase,
// written and fsynced before the action runs, and the "result" phase after
// it (a denied call has only the first).
//
// # Chain and MAC
//
// seq numbers the lines of the file from 1. prev is the lowercase hex sha256
// of the previous line's exact bytes without its newline; the first line's
// prev is GenesisPrev (64 zeros). Editing, inserting, deleting or reordering
// lines breaks the chain at the damaged place; Verify names the first bad
// line and the kind of damage.
//
// With a key each line also carries mac = hex(HMAC-SHA256(key, C)), where C
// is the line encoded without its mac member. The mac member is always the
// last one, so C is the written line with its final
// `,"mac":"<64 hex digits>"}` (74 bytes) replaced by `}`. Without the key a
// whole file rewritten with recomputed hashes and seqs cannot be told from
// the original; with it, the first rewritten line fails its MAC. A head
// noted earlier (VerifyReport.Head) detects records cut from the end.
//
// # Writing
//
// Writer.Append takes an exclusive flock(2) on the file (several processes
// may share one log), reads the last line for seq and prev, redacts every
// string (Options.Secrets, then Options.Redact patterns), bounds it
// (Options.PreviewBytes), hashes, writes the line with one write(2) and
// fsyncs. A line left without its newline by a crash stays a line of its
// own: the next record starts on a new line and chains to the fragment's
// bytes; Verify reports the fragment as "truncated".
//
// # Reading
//
// Verify checks a log; Scan, ReadAll, Show, ComputeStats and Replay read it
// for people and tools (they skip lines that are not records; Verify is the
// one that judges them).
package audit
