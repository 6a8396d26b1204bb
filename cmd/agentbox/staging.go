package main

import "os"

// stagingOff: the user asked for the old direct rw mount (no staging
// layer): AGENTBOX_STAGING=off. Said in the start header.
func stagingOff() bool { return os.Getenv("AGENTBOX_STAGING") == "off" }
