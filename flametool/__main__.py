from .commands.entry import main_entry

main_entry()
