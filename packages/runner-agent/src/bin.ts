#!/usr/bin/env node
/** `wes-agent`: see docs/operating-runners.md, "Runners behind NAT". */
export {}
