package main

// TEMPORARY until policy.MatchFile lands.
func matchFile(allow, deny []string, rel string, write bool) (bool, string) { return false, "" }
