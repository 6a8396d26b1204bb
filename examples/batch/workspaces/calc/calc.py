def add(a, b):
    return a - b  # bug: should add
