"""Placeholder; filled in below."""
def add_arguments(parser):
    parser.add_argument("name")
def main(args):
    return 2
