"""Placeholder: replaced by the sample loader."""
import argparse
def register(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    return None
