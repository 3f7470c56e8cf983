package shimclient

import "syscall"

// terminate is what the backend sends a shim it kills.
const terminate = syscall.SIGTERM
