# What a pod's command does on a fake node, as far as time goes: the input is
# the pod, the output {t: seconds it runs, forever: true when it never ends by
# itself}. The stage "ringfire-pod-plays-command" (stages.yaml) runs the pod
# that long; its template works out the exit code by the same rules.
#
# The script is the first container's command and args: what follows
# `sh -c` (or bash, dash), else the words joined. It is read as commands
# chained by `&&` and `;` (a command after `&&` runs only if the one before
# succeeded):
#   sleep N[smhd]          runs N, succeeds;  sleep infinity: forever
#   exit K                 ends the script with K
#   sshd, tail -f, nginx   forever (daemons)
#   echo, true, :, printf, python*, mpiexec, mpirun, torchrun, hostname,
#   date, cat, ls, env, mkdir, touch, cd, export
#                          succeed at once
#   false                  fails with 1
#   anything else          127, command not found (as `sh x.sh` for a
#                          script the image does not have)
(.spec.containers[0] | (.command // []) + (.args // [])) as $a
| (if ($a | length) >= 3 and ($a[0] | test("(^|/)(ba|da)?sh$")) and $a[1] == "-c"
   then $a[2] else ($a | map(tostring) | join(" ")) end) as $s
| [$s | scan("(^|&&|;)([^;&]*)")]
| reduce .[] as $g ({t: 0, code: 0, stop: false, forever: false};
    if .stop or ($g[0] == "&&" and .code != 0) then .
    else
      ($g[1] | gsub("^\\s+|\\s+$"; "") | sub("^\\S*/"; "")) as $c
      | if $c == "" then .
        elif ($c | test("^sleep\\s+infinity")) then .forever = true | .stop = true
        elif ($c | test("^sleep\\s+[0-9]")) then
          ($c | capture("^sleep\\s+(?<n>[0-9.]+)(?<u>[smhd]?)")) as $m
          | .t += (($m.n | tonumber) * ({"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[$m.u]))
          | .code = 0
        elif ($c | test("^exit(\\s|$)")) then .stop = true
        elif ($c | test("^(sshd|nginx|tail\\s+-f)(\\s|$)")) then .forever = true | .stop = true
        elif ($c | test("^(echo|true|:|printf|python[0-9.]*|mpiexec|mpirun|torchrun|hostname|date|cat|ls|env|mkdir|touch|cd|export)(\\s|$)")) then .code = 0
        elif ($c | test("^false(\\s|$)")) then .code = 1
        else .code = 127
        end
    end)
| {t, forever}
