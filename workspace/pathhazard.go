package workspace

// PathHazard is the host hazard a change at the workspace-relative path
// rel is by its path alone ("" when none), the rule and why, counting
// every git name as a repository's (the workspace may have no .git of its
// own): the policy tools use it to tell whether a literal
// files.write.allow entry lifts a hazard (see WriteDecider's explicit).
func PathHazard(rel string) (rule, why string) { return pathHazard(rel, false) }
