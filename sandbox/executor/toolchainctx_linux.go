package executor

// toolImage is what a traced process's current image is to the
// toolchains: a member or driver of one ("" for neither).
type toolImage struct {
	toolchain string
	driver    bool
}

// maxToolImages bounds the processes whose toolchain is remembered; past
// it, new ones are not (their members are then judged by their own names:
// stricter, never looser).
const maxToolImages = 4096

// forked gives a new task its parent's image (a fork runs the parent's
// program until it executes another).
func (c *traceCall) forked(parent, child int) {
	if img, ok := c.imgs[parent]; ok && len(c.imgs) < maxToolImages {
		if c.imgs == nil {
			c.imgs = map[int]toolImage{}
		}
		c.imgs[child] = img
	}
}

// toolchainOfExec says as part of which toolchain the program pid has just
// executed runs: a member or driver of the toolchain whose file pid ran
// until now (go running its compile, gcc its cc1 or ld), or a file not in
// the image that a driver built and runs (go test's test binary). ""
// when none: the program is judged on its own.
func (c *traceCall) toolchainOfExec(pid int, exe string, id identity) string {
	before, ok := c.imgs[pid]
	if !ok {
		// The child's exec came before its parent's fork event.
		before = c.imgs[parentOf(pid)]
	}
	switch {
	case before.toolchain == "":
		return ""
	case id.known && id.toolchain == before.toolchain:
		return before.toolchain
	case !id.known && before.driver && builtBy(before.toolchain, exe):
		return before.toolchain
	}
	return ""
}

// ran notes the image pid runs now that its exec was allowed.
func (c *traceCall) ran(pid int, id identity) {
	if id.toolchain == "" || len(c.imgs) >= maxToolImages {
		delete(c.imgs, pid)
		return
	}
	if c.imgs == nil {
		c.imgs = map[int]toolImage{}
	}
	c.imgs[pid] = toolImage{toolchain: id.toolchain, driver: id.driver}
}
