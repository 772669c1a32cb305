/** @wes/runner-agent: the `wes-agent` command and its parts (issue 34). */
export {}
