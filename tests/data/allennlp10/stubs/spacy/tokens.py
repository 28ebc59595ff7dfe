class Token:  # isinstance checks only
    pass


class Doc:
    pass
