package sandbox

// Removed is one sandbox gc removed, and why (its owner is proven dead,
// or it is older than the age bound although its owner could not be
// proven dead).
type Removed struct {
	ID     string
	Reason string
}
