"""python -m simkit info: what this build of simkit has and which backend `auto` picks."""
import sys

from . import info


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv not in ([], ["info"]):
        print("usage: python -m simkit info", file=sys.stderr)
        return 2
    i = info()
    print(f"simkit {i['version']} (commit {i['commit']})")
    print(f"build:    {i['build_type']} {i['compiler']}, OpenMP {i['openmp']}")
    if i["cuda_built"]:
        print(f"cuda:     backends built ({i['cuda_compiler']}, architectures {i['cuda_architectures']})")
    else:
        print("cuda:     backends not built (nvcc not found when the package was built)")
    cuda = i["cuda"]
    if cuda["usable"]:
        print("devices:  " + ", ".join(cuda["devices"]))
    elif i["cuda_built"]:
        print(f"devices:  none usable: {cuda['reason']}")
    print("backend auto -> " + ("cuda" if cuda["usable"] else "cpu"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
