package audit

// EventChanges is one call's checkpoint on a staged workspace: the
// changes promoted into the workspace after the call (Files, each with
// its sha256 before and after). Held changes are alarm records.
const EventChanges = "changes"
