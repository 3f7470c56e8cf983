package claudecode

// FastPathAgrees exposes the fast path's differential check to the golden
// tests, which live in the external test package.
var FastPathAgrees = fastPathAgrees
